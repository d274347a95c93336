"""The stand-in sample app's package, packed into a bundle by `lineup app build`."""

from ._app import BoardGameApp

__all__ = ["BoardGameApp"]
