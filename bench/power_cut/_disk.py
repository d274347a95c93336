"""`PowerCutDisk`: a backing directory mounted through the power-cut file system, cut and
mounted again from the owner's side (a test, the bench)."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from . import _control
from ._control import CutReport
from ._users import kill_users, users


class PowerCutError(RuntimeError):
    """The file system could not be mounted, cut or unmounted as asked."""


class PowerCutDisk:
    """`backing` (a directory: the disk's durable content) seen at `mount_point` through a
    server process of its own. `mount`, then any number of `power_cut`s, then `unmount`;
    as a context manager it is mounted inside and unmounted (or torn down) after."""

    def __init__(self, backing: Path, mount_point: Path, *, timeout: float = 10.0) -> None:
        self.backing = backing
        self.mount_point = mount_point
        self._timeout = timeout
        self._server: subprocess.Popen[bytes] | None = None
        self._mounted = False
        self._unread = b""

    @property
    def mounted(self) -> bool:
        return self._mounted

    def mount(self) -> None:
        """Mount `backing` at `mount_point` (afresh after a cut: a new kernel mount, no
        cache of the last one) and wait until it is there."""
        if self._mounted:
            raise PowerCutError(f"{self.mount_point} is mounted already")
        if self._server is None:
            self.backing.mkdir(parents=True, exist_ok=True)
            self.mount_point.mkdir(parents=True, exist_ok=True)
            self._server = subprocess.Popen(
                [sys.executable, "-m", "bench.power_cut", self.backing, self.mount_point],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Signals meant for the owner's process group (Ctrl-C) leave the server to
                # the owner's clean-up, which unmounts.
                start_new_session=True,
            )
            self._unread = b""
        else:
            self._send("mount", None)
        self._expect("mounted")
        self._mounted = True

    def cut(self, *, seed: int | None = None) -> CutReport:
        """The power goes: drop every write and change of names no fsync made durable
        (with a `seed`, keep a random prefix of each file's writes, torn at 4 KiB, and of
        the changes of names), and unmount. Every process using the disk must be dead
        (`kill_users`): the kernel's caches go with the mount."""
        still = users(self.mount_point)
        if still:
            raise PowerCutError(
                f"processes {sorted(still)} still use {self.mount_point}: kill them first"
            )
        self._send("cut", seed)
        self._mounted = False
        report = CutReport.from_json(self._expect("cut"))
        if os.path.ismount(self.mount_point):
            self.tear_down()
            raise PowerCutError(f"{self.mount_point} was still mounted after the cut")
        return report

    def power_cut(self, *, seed: int | None = None) -> CutReport:
        """Kill every process using the disk, cut, and mount the disk again."""
        kill_users(self.mount_point, timeout=self._timeout)
        report = self.cut(seed=seed)
        self.mount()
        return report

    def unmount(self) -> None:
        """Make everything durable, unmount and end the server (the processes must have
        closed their files: an unmount with files open is refused)."""
        if self._mounted:
            self._send("unmount", None)
            self._mounted = False
            self._expect("unmounted")
        self._wait_exit()

    def __enter__(self) -> PowerCutDisk:
        self.mount()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is None and self._server is not None:
            self.unmount()
        else:
            self.tear_down()

    def tear_down(self) -> None:
        """Leave no server and no mount behind, whatever state they are in."""
        server, self._server = self._server, None
        self._mounted = False
        if server is not None:
            if server.poll() is None:
                server.kill()
                server.wait()
            _close_pipes(server)
        subprocess.run(["umount", "-l", self.mount_point], capture_output=True, check=False)

    def _send(self, kind: _control.Command, value: Any) -> None:
        if self._server is None or self._server.stdin is None:
            raise PowerCutError(f"{self.mount_point} is not mounted")
        self._server.stdin.write(_control.line(kind, value))
        self._server.stdin.flush()

    def _expect(self, wanted: _control.Event) -> Any:
        """The value of the server's next event, which must be `wanted`."""
        kind, value = _control.parse(self._read_line())
        if kind != wanted:
            self.tear_down()
            raise PowerCutError(f"the power-cut file system answered {kind}: {value}")
        return value

    def _read_line(self) -> bytes:
        assert self._server is not None and self._server.stdout is not None
        out = self._server.stdout.fileno()
        deadline = time.monotonic() + self._timeout
        while b"\n" not in self._unread:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([out], [], [], max(0.0, left))
            chunk = os.read(out, 4096) if ready else b""
            if not chunk:
                self.tear_down()
                what = "ended" if ready else f"did not answer within {self._timeout} s"
                raise PowerCutError(f"the power-cut file system's server {what}")
            self._unread += chunk
        raw, self._unread = self._unread.split(b"\n", 1)
        return raw

    def _wait_exit(self) -> None:
        """Close the server's input (it ends when told nothing more) and wait for it."""
        server = self._server
        assert server is not None and server.stdin is not None
        server.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=self._timeout)
        ended = server.poll() is not None
        self.tear_down()
        if not ended or os.path.ismount(self.mount_point):
            raise PowerCutError(f"the server of {self.mount_point} did not end after unmounting")


def _close_pipes(server: subprocess.Popen[bytes]) -> None:
    for pipe in (server.stdin, server.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):  # a server killed before reading
                pipe.close()
