"""Why an installed app's process did not start, in words for a person.

The reason is in the last lines of the app's log (a Python traceback, or the jail's own
line): the person is told what failed in one phrase, never the traceback or an exception's
class name; the lines themselves stay in the log, which the refusal names.

The app manager fails the launch with `app_start_failed`, logs those lines, and gives as
its detail one phrase read from their last line (`SCOPE did not start: its code imports a
module it cannot find`, `… was refused a file it needs (permission denied)`, …); `lineup app
launch` adds which log says why. When a process fails to start is the supervisor's rule
(`actors/kernel/supervising/_supervisor.py`, "A start that fails").
"""

from __future__ import annotations

from typing import Final

# The last line of a traceback starts with its exception's class: what that means for an app
# that was starting. The first that matches wins.
_REASONS: Final = (
    ("PermissionError", "its process was refused a file it needs (permission denied)"),
    ("ModuleNotFoundError", "its code imports a module it cannot find"),
    ("ImportError", "its code failed to import"),
    ("SyntaxError", "its code has a syntax error"),
    ("IndentationError", "its code has a syntax error"),
    ("MemoryError", "it ran out of memory"),
    ("jail: cannot", "its isolation could not be set up"),
)
_UNKNOWN: Final = "its process ended before it was ready"


def start_failure(scope: str, log_tail: str) -> str:
    """`SCOPE did not start: WHY`, from `log_tail` (the log's last lines joined by " | ")."""
    last = log_tail.rsplit(" | ", 1)[-1].strip()
    why = next((words for prefix, words in _REASONS if last.startswith(prefix)), _UNKNOWN)
    return f"{scope} did not start: {why}"
