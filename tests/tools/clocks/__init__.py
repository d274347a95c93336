"""The clocks app's package, packed into a bundle by `lineup app build`."""

from ._app import ClocksApp

__all__ = ["ClocksApp"]
