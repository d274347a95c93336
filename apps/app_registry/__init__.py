"""The app-registry core app: the user's window on the app registry."""

from ._app import AppRegistryApp

__all__ = ["AppRegistryApp"]
