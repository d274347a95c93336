"""What the launcher and the supervisor share, kept free of heavy imports: the launcher
starts on every launch and restart of an installed app, so it imports no more than this
(and the kernel's `_own_process`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

PASSED_ENV: Final = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LINEUP_LOG_LEVEL")
PROJECT_ROOT: Final = Path(__file__).resolve().parents[4]  # holds the `actors` package


def scrubbed_environment(source: Mapping[str, str], *, home: str | None = None) -> dict[str, str]:
    """What an isolated process may know of the environment: what Python needs to start and
    to import the project, and HOME (its own directory)."""
    env = {key: source[key] for key in PASSED_ENV if key in source}
    env["PYTHONPATH"] = os.pathsep.join(_import_path(source.get("PYTHONPATH", "")))
    # The cwd is the app's own writable dir: it must not shadow the kernel's modules, and
    # neither may a user site dir under HOME (the same dir).
    env["PYTHONSAFEPATH"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    if home is not None:
        env["HOME"] = home
    return env


def _import_path(pythonpath: str) -> list[str]:
    """The project root, then the absolute entries of PYTHONPATH (a relative one would be
    looked up in the app's own directory)."""
    entries = [str(PROJECT_ROOT), *pythonpath.split(os.pathsep)]
    return list(dict.fromkeys(e for e in entries if os.path.isabs(e)))
