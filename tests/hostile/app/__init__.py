"""The hostile app's package, packed into a bundle by `lineup app build`."""

from ._app import HostileApp

__all__ = ["HostileApp"]
