"""Pomodoro: a focus timer, the sample installed app and the bundle tests' subject.

Tools: `pomodoro.start` {minutes}, `pomodoro.status`, `pomodoro.stop`. Its manifest is
generated from the declarations in `_app` (`lineup app build apps/pomodoro --out FILE`).
"""

from ._app import PomodoroApp

__all__ = ["PomodoroApp"]
