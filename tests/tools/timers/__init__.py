"""The timers app's package, packed into a bundle by `lineup app build`."""

from ._app import TimersApp

__all__ = ["TimersApp"]
