"""The app as pid 1 of a pid namespace of its own, and the launcher as its waiting parent.

After `unshare(CLONE_NEWPID)` the launcher's next child is the namespace's init. The
launcher forks it and stays, outside the namespace, as its parent:

- it relays: a signal it receives (SIGTERM from the supervisor's stop) goes to the app;
  the app's exit status becomes its own (a signal by killing itself with it), so the
  supervisor sees the app's end as the launcher's;
- it dies with the supervisor (its parent-death signal, armed at its start and never
  cleared: it changes no credential), and the app dies with it (the app's parent-death
  signal, armed again after each credential change). When the app, the namespace's init,
  ends, the kernel kills every process left in the namespace;
- it stays root, in the root pid namespace: the app's uid may neither signal nor trace it,
  and cannot even name it (its pid is outside the app's namespace);
- first of all it moves itself and the init into the app's cgroups (`join`), while the
  init builds the app's view; the init waits for the outcome (`joined`) before it takes
  the app's identity, so no code of the app ever runs outside its cgroups.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import sys
from collections.abc import Callable
from typing import Final, NoReturn

from ..._own_process import set_death_signal

RELAYED: Final = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)

_launcher_fd = -1  # in the app, before its exec: a pidfd of the launcher
_joined_fd = -1  # in the app, until it has read it: the outcome of the launcher's `join`


def fork_init(join: Callable[[list[int]], str | None]) -> int:
    """Fork the namespace's init. Returns its pid as the host sees it, in the app; in the
    launcher, never (it calls `join` with its own pid and the init's, tells the init the
    outcome, then waits, relays and exits as the app did)."""
    own = os.pidfd_open(os.getpid())
    joined_r, joined_w = os.pipe2(os.O_CLOEXEC)
    # No signal may be lost between the fork and the relay's handlers.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, RELAYED)
    pid = os.fork()
    if pid == 0:
        global _launcher_fd, _joined_fd
        _launcher_fd, _joined_fd = own, joined_r
        os.close(joined_w)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        set_death_signal()
        if not _launcher_alive():  # it died before the signal was armed
            os._exit(1)
        return _host_pid()
    os.close(own)
    os.close(joined_r)
    problem = join([os.getpid(), pid])
    with contextlib.suppress(OSError):  # the init is gone: its status is relayed below
        os.write(joined_w, b"ok" if problem is None else problem.encode()[:4000])
    os.close(joined_w)
    _relay(pid, mask)


def joined() -> str | None:
    """In the init: wait for the launcher's `join`; what failed, in words, or None. A
    launcher that ended without a word joined nothing, and the app is never run."""
    global _joined_fd
    chunks = []
    while chunk := os.read(_joined_fd, 4096):
        chunks.append(chunk)
    os.close(_joined_fd)
    _joined_fd = -1
    word = b"".join(chunks).decode(errors="replace")
    if not word:
        os._exit(1)
    return None if word == "ok" else word


def rearm_death_signal() -> None:
    """Again after a credential change (which clears it); exit if the launcher is gone."""
    set_death_signal()
    if not _launcher_alive():
        os._exit(1)


def close_launcher_fd() -> None:
    global _launcher_fd
    if _launcher_fd >= 0:
        os.close(_launcher_fd)
        _launcher_fd = -1


def _launcher_alive() -> bool:
    readable, _, _ = select.select([_launcher_fd], [], [], 0)  # a pidfd: readable at exit
    return not readable


def _host_pid() -> int:
    """Our pid in the root namespace: /proc is still the host's here, and NSpid lists the
    pid from the mount's namespace down to ours."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("NSpid:"):
                return int(line.split()[1])
    return os.getpid()


def _relay(pid: int, mask: set[int | signal.Signals]) -> NoReturn:
    """The launcher's life from here: hold nothing of the app's, wait, relay, end alike."""
    # The channel, the report pipe, the private dir: the app's alone. (Not by /proc: the
    # app mounts its own there, in the mount namespace we share, where we have no pid.)
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[1])

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for sig in RELAYED:
        signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    _, status = os.waitpid(pid, 0)  # a handled signal interrupts it; Python retries
    if os.WIFSIGNALED(status):
        killed = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the app's core is not ours
        with contextlib.suppress(OSError, ValueError):
            signal.signal(killed, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [killed])
        sys.stderr.flush()
        os.kill(os.getpid(), killed)
        os._exit(128 + killed)
    os._exit(os.waitstatus_to_exitcode(status))
