"""What the launcher and the supervisor share, kept free of heavy imports: the launcher
starts on every launch and restart of an installed app, so it imports no more than this.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

PASSED_ENV: Final = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LINEUP_LOG_LEVEL")
PROJECT_ROOT: Final = Path(__file__).resolve().parents[2]  # holds the `actors` package
_PR_SET_PDEATHSIG: Final = 1
_PR_SET_NAME: Final = 15


def set_death_signal() -> None:
    """SIGKILL when the parent dies (Linux)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def name_process(name: str) -> None:
    """The name `ps` and `/proc/PID/comm` show (Linux; 15 bytes at most): a process forked
    from another shares its command line, so this is what tells them apart."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL when the parent dies (Linux); exit now if it already has."""
    set_death_signal()
    # The parent may have died before prctl took effect; then we were re-parented.
    # A parent outside our pid namespace reads as 0: we are an app, the init of its own
    # namespace, and the launcher that forked us checked that it was alive once the
    # signal was armed (which survives our exec).
    ppid = os.getppid()
    if ppid not in (parent_pid, 0):
        os._exit(0)


def exited_children() -> Iterator[tuple[int, int]]:
    """Each child that has ended, reaped: (pid, its exit status, or minus the signal that
    ended it). What a zygote tells the supervisor of the processes it forked."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


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
