"""The app `lineup bench tools` calls, packed into a bundle by `lineup app build`."""

from ._app import APP_SCOPE, METHOD, BenchToolApp

__all__ = ["APP_SCOPE", "METHOD", "BenchToolApp"]
