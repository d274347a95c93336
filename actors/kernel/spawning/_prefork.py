"""The first zygote, forked from the supervisor's own process before trio starts.

An exec'd zygote imports trio, pydantic, the contracts and every actor module afresh: about
a CPU-second on every start of the runtime, most of it what the supervisor has just
imported itself. So the supervisor imports the actor modules as well and forks its zygote
before its event loop exists; a process forked from a running trio loop (its threads, its
wakeup fd, its run state) is no place to run anything. A zygote that dies later is
replaced by an exec'd one (`Zygote.run`), since by then the loop runs.

The forked zygote shares the supervisor's command line: `ps` tells it by its name,
`zygote.ZYGOTE_NAME`, and each actor it forks by its actor class's name.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn

from .._collector import settle_garbage_collector
from .._specs import RuntimeConfig
from .zygote import preload, serve


def zygote_preload(config: RuntimeConfig) -> list[str]:
    """What the zygote imports before it forks: the trusted actors (`module:Class`). Never
    an isolated app's: its import would run the app's code in the trusted process every
    actor is forked from."""
    return sorted({c.target for c in config.children if c.isolation is None})


class ForkedZygoteProcess:
    """The forked zygote as `Zygote` watches its process (poll, kill, wait): the supervisor
    is its parent, so it reaps it, and nothing else in it waits for any child."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def _reaped(self, flags: int) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:  # reaped already: there is no other waiter
                self.returncode = -signal.SIGKILL
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        return self._reaped(os.WNOHANG)

    def wait(self) -> int:
        code = self._reaped(0)
        assert code is not None
        return code

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


@dataclass
class PreforkedZygote:
    """A zygote forked and serving, for the supervisor's `Zygote` to adopt."""

    process: ForkedZygoteProcess
    sock: socket.socket


@contextlib.contextmanager
def prefork_zygote(config: RuntimeConfig) -> Iterator[PreforkedZygote | None]:
    """Before `trio.run`: the actor modules imported here, and a zygote forked from this
    process, killed on leaving if nothing adopted it. None when the config execs actors."""
    if config.spawn != "fork":
        yield None
        return
    preload(zygote_preload(config))
    settle_garbage_collector()  # frozen before the fork, so no collection copies them
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _become_zygote(parent, ours, theirs)
    theirs.close()
    zygote = PreforkedZygote(ForkedZygoteProcess(pid), ours)
    try:
        yield zygote
    finally:
        zygote.process.kill()
        zygote.process.wait()
        ours.close()


def _become_zygote(parent: int, ours: socket.socket, theirs: socket.socket) -> NoReturn:
    """The forked child: only its channel to the supervisor kept open, a session of its
    own (a terminal's Ctrl-C reaches only the supervisor), then the zygote's loop."""
    status = 1
    try:
        ours.close()
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        fd = theirs.detach()  # the zygote's loop owns it now
        for entry in os.listdir("/proc/self/fd"):
            if int(entry) not in (0, 1, 2, fd):
                with contextlib.suppress(OSError):  # the listing's own fd, closed already
                    os.close(int(entry))
        # The supervisor's logging is not an actor's: each configures its own.
        logging.root.handlers.clear()
        serve(parent, fd, [])
        status = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(status)
