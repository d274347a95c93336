"""Spawning an actor process with its channel, and waiting on it without polling."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import trio

from ._specs import ChildSpec


class Incarnation:
    """What the supervisor does with an actor process, however it was started: wait for its
    exit status, signal it, stop it by its shutdown rule."""

    pid: int
    sock: socket.socket

    async def wait(self) -> int:
        raise NotImplementedError

    @property
    def returncode(self) -> int | None:
        raise NotImplementedError

    def signal(self, sig: signal.Signals) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    async def stop(self, timeout: float) -> int:
        """SIGTERM, then SIGKILL if it has not exited within `timeout` (0: SIGKILL at once)."""
        if timeout > 0:
            self.signal(signal.SIGTERM)
            with trio.move_on_after(timeout):
                return await self.wait()
        self.signal(signal.SIGKILL)
        return await self.wait()


class ChildProcess(Incarnation):
    """One incarnation of an actor: an OS process holding the other end of a socketpair."""

    def __init__(self, spec: ChildSpec, *, log_dir: Path, env: dict[str, str] | None) -> None:
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        log_dir.mkdir(parents=True, exist_ok=True)
        with open(log_dir / f"{spec.name}.log", "ab") as log_file:
            # Popen runs here, in the supervisor's main thread: a parent-death signal is
            # tied to the thread that forked, and trio's worker threads come and go.
            self.popen = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "actors.kernel.child",
                    spec.target,
                    str(child_sock.fileno()),
                    str(os.getpid()),
                ],
                pass_fds=[child_sock.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,
                env=env,
            )
        child_sock.close()
        self.sock = parent_sock
        self.pid = self.popen.pid
        self._pidfd = os.pidfd_open(self.pid)
        self._waiting = False
        self._exit_lot = trio.lowlevel.ParkingLot()

    async def wait(self) -> int:
        """The exit status (negative: killed by that signal), once the process has exited."""
        while self.popen.poll() is None:
            if self._waiting:  # trio lets one task wait on an fd; the others park
                await self._exit_lot.park()
                continue
            self._waiting = True
            try:
                await trio.lowlevel.wait_readable(self._pidfd)  # readable once it exited
            finally:
                self._waiting = False
                self._exit_lot.unpark_all()
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
        return self.popen.wait()

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"
