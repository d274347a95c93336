"""Spawning an actor process with its channel, and waiting on it without polling."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from .._specs import ChildSpec
from ._applog import AppLog
from ._containment import AppCgroup
from ._quota import watch_directory
from ._sandbox import JailPlan

if TYPE_CHECKING:
    from ._app_zygote import AppZygote, AppZygoteLaunch

# What of an app's log explains a start that failed: its last lines, at most this much.
TAIL_LINES: Final = 6
TAIL_CHARS: Final = 1500


class Incarnation:
    """What the supervisor does with an actor process, however it was started: wait for its
    exit status, signal it, stop it by its shutdown rule."""

    pid: int
    sock: socket.socket
    isolation: dict[str, Any] | None = None  # what the launcher enforced (isolated apps)
    failure: str = ""  # why it ended, if not its exit status alone (its quota, a failed start)
    # Set for a start someone waits on: called once the process has exited, True if that
    # start failed (it never became ready). Its reason then comes from its log.
    start_failed: Callable[[], bool] | None = None

    async def wait(self) -> int:
        raise NotImplementedError

    async def run_aside(self) -> None:
        """What runs beside its channel for its life (an isolated app's log and quota)."""

    def kill_remains(self) -> None:
        """Kill whatever it started that is still alive (an isolated app's cgroup)."""

    async def release(self) -> str:
        """Once it has exited: nothing of it left; a note on its end ("" or why)."""
        return ""

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


class _Exec:
    """A process the supervisor exec'd itself: its child, waited on by a pidfd."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self._pidfd = os.pidfd_open(self.pid)
        self._waiting = False
        self._exit_lot = trio.lowlevel.ParkingLot()

    async def forked(self) -> bool:
        return True

    def poll(self) -> int | None:
        return self.popen.poll()

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


class ChildProcess(Incarnation):
    """One incarnation of an actor: an OS process holding the other end of a socketpair.
    An isolated app's is exec'd through its launcher, or forked by the app zygote."""

    def __init__(
        self,
        spec: ChildSpec,
        *,
        log_dir: Path,
        env: dict[str, str] | None,
        jail: JailPlan | None = None,
        cgroup: AppCgroup | None = None,
        app_zygote: AppZygote | None = None,
    ) -> None:
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        command = [
            sys.executable,
            "-m",
            "actors.kernel.actor_process.child",
            spec.target,
            str(child_sock.fileno()),
            str(os.getpid()),
        ]
        pass_fds = [child_sock.fileno()]
        self._report = report_w = -1
        if jail is not None:
            # The launcher writes what it enforced to this pipe, which closes at its exec.
            self._report, report_w = os.pipe()
            os.set_blocking(self._report, False)
            command = jail.command(command, channel_fd=child_sock.fileno(), report_fd=report_w)
            pass_fds.append(report_w)
            env = jail.env
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{spec.name}.log"
        try:
            self._log_start = self.log_path.stat().st_size  # where this incarnation's begins
        except FileNotFoundError:
            self._log_start = 0
        self.spec = spec
        self.cgroup = cgroup
        self.log: AppLog | None = None
        try:
            with open(log_dir / f"{spec.name}.log", "ab") as log_file:
                output: Any = log_file
                if spec.isolation is not None:  # it gets a pipe, never its log file
                    self.log = AppLog(log_dir / f"{spec.name}.log", spec.isolation.log_max)
                    output = self.log.write_fd
                if app_zygote is not None and jail is not None:
                    fds = [child_sock.fileno(), report_w, int(output)]
                    self.launched: _Exec | AppZygoteLaunch = app_zygote.launch(
                        spec.target, jail.fields(), fds
                    )
                else:
                    # Popen runs here, in the supervisor's main thread: a parent-death
                    # signal is tied to the thread that forked, and trio's worker threads
                    # come and go.
                    popen = subprocess.Popen(
                        command,
                        pass_fds=pass_fds,
                        stdin=subprocess.DEVNULL,
                        stdout=output,
                        stderr=output,
                        start_new_session=True,
                        env=env,
                        cwd="/" if jail is not None else None,
                    )
                    self.launched = _Exec(popen)
        except BaseException:
            if self._report >= 0:
                os.close(self._report)
            if self.log is not None:
                self.log.close()
            raise
        finally:
            child_sock.close()
            if report_w >= 0:
                os.close(report_w)
            if self.log is not None:
                self.log.started()
        self.sock = parent_sock
        self.pid = self.launched.pid  # the launcher's, until it reports the app's
        self.jail = jail

    async def read_jail_report(self, timeout: float) -> dict[str, Any] | None:
        """The launcher's report, once it has exec'd the child; None if it ended without
        one (it failed, and the child never ran) or took longer than `timeout`."""
        data = b""
        try:
            with trio.move_on_after(timeout):
                if not await self.launched.forked():
                    return None
                self.pid = self.launched.pid
                while chunk := await self._read_report():
                    data += chunk
        finally:
            os.close(self._report)
            self._report = -1
        try:
            self.isolation = json.loads(data)
        except ValueError:
            return None
        assert self.isolation is not None
        self.pid = int(self.isolation.pop("pid", self.pid))
        return self.isolation

    def signal(self, sig: signal.Signals) -> None:
        """To the launcher, which relays it to the app; SIGKILL to all of it at once."""
        if self.returncode is None and self.launched.pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.launched.pid, sig)
        if sig == signal.SIGKILL:
            self.kill_remains()

    async def run_aside(self) -> None:
        isolation = self.spec.isolation
        async with trio.open_nursery() as nursery:
            if self.log is not None:
                nursery.start_soon(self.log.copy)
            if isolation is not None and self.jail is not None:

                def fail(reason: str) -> None:
                    self.failure = reason
                    self.signal(signal.SIGKILL)

                nursery.start_soon(
                    watch_directory,
                    self.jail.private_dir,
                    isolation.dir_max,
                    isolation.dir_check_s,
                    fail,
                )

    def kill_remains(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill()

    async def release(self) -> str:
        note = ""
        code = self.returncode
        if self.start_failed is not None and code is not None and self.start_failed():
            self.failure = f"did not start ({describe_exit(code)})"
            if self.log is not None:
                self.log.close()  # all it wrote is in the file now
                self.log = None
            tail = log_tail(self.log_path, self._log_start)
            if tail:
                self.failure += f": {tail}"
        if self.cgroup is not None:
            if self.cgroup.oom_kills():
                note = "out of memory (the limit of its cgroup)"
            if not await self.cgroup.destroy():
                note = (note + "; " if note else "") + "its cgroup could not be emptied"
            self.cgroup = None
        if self.log is not None:
            self.log.close()
            self.log = None
        return note

    async def _read_report(self) -> bytes:
        while True:
            await trio.lowlevel.wait_readable(self._report)
            with contextlib.suppress(BlockingIOError):
                return os.read(self._report, 65536)

    def discard(self) -> None:
        """A launch given up before it reported: what it started killed, its fds closed
        (its cgroup stays, for the next try)."""
        self.kill_remains()
        self.sock.close()
        if self.log is not None:
            self.log.close()
            self.log = None

    async def wait(self) -> int:
        """The exit status (negative: killed by that signal), once the process has exited."""
        return await self.launched.wait()

    @property
    def returncode(self) -> int | None:
        return self.launched.poll()


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def log_tail(path: Path, start: int = 0) -> str:
    """The last lines of what an actor's log holds past `start` (from its beginning if it
    was rotated since), one line each, joined by " | ": why a start failed."""
    try:
        with open(path, "rb") as log:
            size = log.seek(0, os.SEEK_END)
            begin = start if start <= size else 0
            log.seek(max(begin, size - 64 * 1024))
            text = log.read().decode(errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-TAIL_LINES:])[-TAIL_CHARS:]
