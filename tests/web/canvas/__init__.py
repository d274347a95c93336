"""The canvas test app's package, packed into a bundle by `lineup app build`."""

from ._app import CanvasApp

__all__ = ["CanvasApp"]
