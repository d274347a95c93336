"""The app `lineup bench speech` calls, packed into a bundle by `lineup app build`."""

from ._app import APP_SCOPE, HEAR, SAY, BenchSpeechApp

__all__ = ["APP_SCOPE", "HEAR", "SAY", "BenchSpeechApp"]
