"""The app `lineup bench tools` calls, packed into a bundle by `lineup app build`."""

from ._app import BenchToolApp

__all__ = ["BenchToolApp"]
