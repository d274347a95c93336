"""The toolbox app's package, packed into a bundle by `lineup app build`."""

from ._app import ToolboxApp

__all__ = ["ToolboxApp"]
