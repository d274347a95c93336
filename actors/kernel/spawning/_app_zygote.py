"""The supervisor's side of the app zygote (`jail.app_zygote`): launch by fork.

It is started on the first launch of an installed app, exec'd like an app is (a scrubbed
environment, no fd of the runtime's, its own session) and told, in its first message, to
hide the data dir. A
launch sends it the app's jail (`JailPlan.fields`) with the app's channel, the report's
pipe and the app's log attached; it answers with the pid of the forked process (the
app's relay, which the supervisor signals as it signals an exec'd launcher) and later
with its exit status, since only the zygote, its parent, can reap it.

If the zygote dies, every process it forked dies with it (parent-death signals, and the
supervisor empties each app's cgroup): each counts as killed and restarts by its policy.

When it cannot be used, the launch is exec'd through the launcher and the isolation
report's `launch` says why: `exec (the runtime's setting)` (`RuntimeConfig.app_launch` is
`"exec"`), `exec (app zygote unavailable: ...)` (it did not start, or is `unusable on this
host` when it could not take its own namespaces; it is not started again then), or `exec
(the app zygote died mid-launch)`: a launch whose fork ended before its report (the zygote
killed meanwhile) is given up (what it started killed by the cgroup) and exec'd at once,
never left half-jailed. The next launch after the zygote died starts a new one. A forked
launch reports `launch: "zygote"`. An exec'd launch costs two interpreter starts (the
launcher's and the app's); a fork from this preloaded, secret-free parent costs none.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from .._ids import new_id

log = logging.getLogger("lineup.supervisor")

START_TIMEOUT = 30.0  # seconds for the zygote to say it is ready (a loaded machine)


class AppZygoteLaunch:
    """One app process forked by the app zygote: its relay's pid once forked, its exit
    status once the zygote reaped it."""

    def __init__(self) -> None:
        self.pid = 0  # not known until the zygote answers
        self.status: int | None = None
        self._forked = trio.Event()
        self._exited = trio.Event()

    async def forked(self) -> bool:
        """Wait for the fork; False if the zygote died first."""
        await self._forked.wait()
        return self.pid > 0

    def poll(self) -> int | None:
        return self.status

    async def wait(self) -> int:
        await self._exited.wait()
        assert self.status is not None
        return self.status

    def _ended(self, status: int) -> None:
        if self.status is None:
            self.status = status
        self._forked.set()
        self._exited.set()


class AppZygote:
    def __init__(self, hidden: Path, env: dict[str, str]) -> None:
        self.hidden = hidden
        self.env = env
        self.alive = False
        self.pid: int | None = None
        self.problem = "it has not started"  # why it cannot launch, while it cannot
        # It never became ready (the host lacks what it needs, or it fails to start): it is
        # not started again, or every launch would wait for it to fail once more.
        self.unusable = False
        self.steps: dict[str, str] = {}
        self._sock: socket.socket | None = None
        self._waiting: dict[str, AppZygoteLaunch] = {}
        self._running: dict[int, AppZygoteLaunch] = {}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # In the main thread: a parent-death signal is tied to the thread that forked.
        popen = subprocess.Popen(  # noqa: ASYNC220
            [
                sys.executable,
                "-m",
                "actors.kernel.spawning.jail.app_zygote",
                str(os.getpid()),
                str(theirs.fileno()),
            ],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=self.env,
            cwd="/",
        )
        theirs.close()
        ours.send(json.dumps({"hide": [str(self.hidden)]}).encode())  # into an empty buffer
        ours.setblocking(False)
        self._sock = ours
        started = announced = False
        try:
            with trio.move_on_after(START_TIMEOUT) as waiting:
                started = await self._read_until_ready(ours)
            if waiting.cancelled_caught:
                self.problem = f"not ready within {START_TIMEOUT:g} s"
            if not started:
                self.unusable = True
                log.warning("the app zygote cannot launch apps (%s): they are exec'd", self.problem)
            announced = True
            task_status.started()
            if started:
                await self._serve(ours)
                self.problem = "it died"
        finally:
            self.alive = False
            for launch in [*self._waiting.values(), *self._running.values()]:
                launch._ended(-signal.SIGKILL)  # its relay died with the zygote
            self._waiting.clear()
            self._running.clear()
            ours.close()
            if popen.poll() is None:
                popen.kill()
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(popen.wait)
            if not announced:
                task_status.started()

    async def _messages(self, sock: socket.socket) -> dict[str, Any] | None:
        while True:
            await trio.lowlevel.wait_readable(sock)
            try:
                data = sock.recv(1 << 20)
            except BlockingIOError:
                continue
            except OSError:  # reset: it died with our requests unread
                return None
            return json.loads(data) if data else None

    async def _read_until_ready(self, sock: socket.socket) -> bool:
        message = await self._messages(sock)
        if message is None:
            self.problem = "it ended before it was ready"
            return False
        if message["type"] == "unusable":
            self.problem = f"unusable on this host: {message['reason']}"
            return False
        self.pid = int(message["pid"])
        self.steps = dict(message["steps"])
        self.alive = True
        self.problem = ""
        log.info("app zygote %d ready (%s)", self.pid, "; ".join(self.steps.values()))
        return True

    async def _serve(self, sock: socket.socket) -> None:
        while (message := await self._messages(sock)) is not None:
            kind = message["type"]
            if kind == "forked":
                launch = self._waiting.pop(message["nonce"], None)
                if launch is not None:
                    launch.pid = int(message["pid"])
                    self._running[launch.pid] = launch
                    launch._forked.set()
            elif kind == "exited":
                launch = self._running.pop(int(message["pid"]), None)
                if launch is not None:
                    launch._ended(int(message["status"]))
            elif kind == "refused":
                launch = self._waiting.pop(message["nonce"], None)
                if launch is not None:
                    launch._ended(1)

    def launch(self, target: str, jail: dict[str, Any], fds: list[int]) -> AppZygoteLaunch:
        """Ask for a fork of app `target` into `jail`, with `fds` (its channel, the report's
        pipe, its log). OSError if the zygote cannot take the request now."""
        if not self.alive or self._sock is None:
            raise OSError(f"the app zygote is not running ({self.problem})")
        nonce = new_id()
        request = {"type": "launch", "nonce": nonce, "target": target, "jail": jail}
        launch = AppZygoteLaunch()
        # One datagram each: never split, never merged with another launch's fds. A few
        # hundred bytes into an idle socket's buffer: it does not block.
        socket.send_fds(self._sock, [json.dumps(request).encode()], fds)
        self._waiting[nonce] = launch
        return launch
