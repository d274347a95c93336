"""The supervisor's side of the zygote (`actors.kernel.spawning.zygote`): spawn by fork,
learn exits.

A forked actor is the zygote's child, not the supervisor's, so the supervisor cannot reap
it: the zygote reports every exit with its status, and `ForkedProcess.wait` waits for that
report. If the zygote itself dies, its children die with it (parent-death signal) and
every process still waited on counts as killed.
"""

from __future__ import annotations

import array
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import trio

from .._ids import new_id
from .._specs import ChildSpec
from ..wire import FrameDecoder, encode
from ._process import Incarnation

if TYPE_CHECKING:
    from ._prefork import PreforkedZygote

log = logging.getLogger("lineup.supervisor")


class _ZygoteProcess(Protocol):
    """An exec'd zygote's `Popen`, or the first one's `ForkedZygoteProcess`."""

    def poll(self) -> int | None: ...
    def kill(self) -> None: ...
    def wait(self) -> int: ...


class Zygote:
    def __init__(self, preload: list[str], *, forked: PreforkedZygote | None = None) -> None:
        """A zygote exec'd by `run`, or, given `forked`, the one forked before trio ran."""
        self.preload = preload
        self._forked = forked
        self._exits: dict[int, int] = {}
        self._exit_lot = trio.lowlevel.ParkingLot()
        self._spawned: dict[str, tuple[trio.Event, list[int]]] = {}
        self._lock = trio.Lock()
        self._sock: trio.socket.SocketType | None = None
        self.alive = False

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        popen: _ZygoteProcess
        if self._forked is not None:
            popen, ours = self._forked.process, self._forked.sock
            self._forked = None  # adopted once: a zygote that dies is replaced by exec
        else:
            popen, ours = self._exec()
        ours.setblocking(False)
        self._sock = trio.socket.from_stdlib_socket(ours)
        decoder = FrameDecoder()
        started = False
        try:
            while True:
                data = await self._sock.recv(65536)
                if not data:
                    break
                for frame in decoder.feed(data):
                    kind = frame["type"]
                    if kind == "ready" and not started:
                        started = self.alive = True
                        task_status.started()
                    elif kind == "spawned":
                        waiter = self._spawned.get(frame["nonce"])
                        if waiter is not None:
                            waiter[1].append(frame["pid"])
                            waiter[0].set()
                    elif kind == "exited":
                        self._exits[frame["pid"]] = frame["status"]
                        self._exit_lot.unpark_all()
        finally:
            self.alive = False
            self._exit_lot.unpark_all()
            for event, _ in self._spawned.values():
                event.set()
            self._sock.close()
            if popen.poll() is None:
                popen.kill()
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(popen.wait)
            if not started:
                log.warning("the zygote did not start: actors will start as new processes")
                task_status.started()

    def _exec(self) -> tuple[subprocess.Popen[bytes], socket.socket]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # In the main thread, like every spawn here: a parent-death signal is tied to the
        # thread that forked, and trio's worker threads come and go.
        popen = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "actors.kernel.spawning.zygote",
                str(os.getpid()),
                str(theirs.fileno()),
                *self.preload,
            ],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        theirs.close()
        return popen, ours

    async def spawn(self, spec: ChildSpec, *, log_dir: Path) -> ForkedProcess:
        if not self.alive or self._sock is None:
            raise RuntimeError("the zygote is not running")
        log_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (a local mkdir, once)
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        nonce = new_id()
        waiter: tuple[trio.Event, list[int]] = (trio.Event(), [])
        request = {
            "type": "spawn",
            "nonce": nonce,
            "target": spec.target,
            "log": str(log_dir / f"{spec.name}.log"),
        }
        # One request in flight at a time: each carries exactly one fd.
        async with self._lock:
            self._spawned[nonce] = waiter
            try:
                fds = array.array("i", [child_sock.fileno()])
                await self._sock.sendmsg(
                    [encode(request)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
                )
                await waiter[0].wait()
            finally:
                self._spawned.pop(nonce, None)
                child_sock.close()
        if not waiter[1]:
            parent_sock.close()
            raise RuntimeError("the zygote died while forking")
        return ForkedProcess(waiter[1][0], parent_sock, self)

    async def wait_exit(self, pid: int) -> int:
        while pid not in self._exits:
            if not self.alive:
                return -signal.SIGKILL  # died with the zygote
            await self._exit_lot.park()
        return self._exits[pid]

    def exit_status(self, pid: int) -> int | None:
        if pid in self._exits:
            return self._exits[pid]
        return None if self.alive else -signal.SIGKILL


class ForkedProcess(Incarnation):
    """An actor process forked by the zygote."""

    def __init__(self, pid: int, sock: socket.socket, zygote: Zygote) -> None:
        self.pid = pid
        self.sock = sock
        self._zygote = zygote

    async def wait(self) -> int:
        return await self._zygote.wait_exit(self.pid)

    @property
    def returncode(self) -> int | None:
        return self._zygote.exit_status(self.pid)
