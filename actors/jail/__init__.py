"""The launcher of an isolated app: `python -m actors.jail OPTIONS -- CHILD_ARGV...`.

It lives outside `actors.kernel` so that starting it imports nothing heavy (no trio, no
pydantic): it runs on every launch and every restart of an installed app. `_launcher`
confines the process and execs the child; `_env` is what it shares with the supervisor
(the scrubbed environment, the parent-death signal). The runtime takes what it needs from
here: `die_with_parent`, `name_process`, `exited_children` (what both zygotes reap),
`scrubbed_environment`, `level_of` (a report's level of confinement). `app_zygote` forks
apps into the same jail (`_launcher.jail_app`) from a preloaded, secret-free parent.
docs/architecture.md, "Isolation".
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._env import die_with_parent, exited_children, name_process, scrubbed_environment

if TYPE_CHECKING:
    from ._launcher import level_of


def __getattr__(name: str) -> Any:
    # The launcher's steps load only for the supervisor, which reads a report's level: an
    # actor process takes `die_with_parent` and `name_process` from here and nothing more.
    if name == "level_of":
        value = importlib.import_module("._launcher", __name__).level_of
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "die_with_parent",
    "exited_children",
    "level_of",
    "name_process",
    "scrubbed_environment",
]
