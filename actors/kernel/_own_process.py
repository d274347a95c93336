"""What a process of the runtime does to itself, kept free of heavy imports (the jail's
launcher starts with it on every launch of an installed app): its name, dying with its
parent, standing alone once forked, and, for a zygote, reaping what it forked.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Iterator
from typing import Final

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


def stand_alone(log: int) -> None:
    """A forked child on its own: a session of its own (a terminal's Ctrl-C reaches only the
    supervisor), stdin from /dev/null, stdout and stderr to `log`, which is then closed."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(null)
