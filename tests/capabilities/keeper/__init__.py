"""The keeper app's package, packed into a bundle by `lineup app build`."""

from ._app import KeeperApp

__all__ = ["KeeperApp"]
