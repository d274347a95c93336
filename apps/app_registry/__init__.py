"""The app-registry core app (seed §4.2-4.3): the user's window on the app registry."""

from ._app import AppRegistryApp

__all__ = ["AppRegistryApp"]
