"""The settings core app: grants, the tool policy, the default app and each app's data."""

from ._app import SettingsApp

__all__ = ["SettingsApp"]
