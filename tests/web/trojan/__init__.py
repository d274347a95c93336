"""The hostile surface's app, packed into a bundle by `lineup app build`."""

from ._app import TrojanApp

__all__ = ["TrojanApp"]
