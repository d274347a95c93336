"""The server process of one backing directory: `python -m bench.power_cut BACKING
MOUNT_POINT`.

It runs apart from everything it serves, so that the processes under test can be killed
without touching it. Each mount is a new kernel mount over a new `PowerCutFs`: nothing of
the last one is left but the backing directory. After a cut it waits for `mount` (its
start-up, about half a second of imports, is paid once); after an unmount it ends.
Mounting needs root (or a user allowed by /etc/fuse.conf to pass `allow_other`): the
runtime's apps run under uids of their own and must reach their files.
"""

from __future__ import annotations

import os
import resource
import sys
from typing import Any

import pyfuse3
import trio

from . import _control
from ._file_system import PowerCutFs

OPTIONS = frozenset({*pyfuse3.default_options, "fsname=power-cut", "allow_other"})


def _say(kind: _control.Event, value: object = None) -> None:
    os.write(sys.stdout.fileno(), _control.line(kind, value))


class _Commands:
    """The owner's command lines on standard input; `None` once it is closed."""

    def __init__(self) -> None:
        self._fd = sys.stdin.fileno()
        self._buffered = b""

    async def next(self) -> tuple[str, Any] | None:
        stream = trio.lowlevel.FdStream(os.dup(self._fd))
        async with stream:
            while b"\n" not in self._buffered:
                chunk = await stream.receive_some()
                if not chunk:
                    return None
                self._buffered += chunk
        return self._take()

    def next_blocking(self) -> tuple[str, Any] | None:
        os.set_blocking(self._fd, True)  # trio's stream made it non-blocking
        while b"\n" not in self._buffered:
            chunk = os.read(self._fd, 4096)
            if not chunk:
                return None
            self._buffered += chunk
        return self._take()

    def _take(self) -> tuple[str, Any]:
        raw, self._buffered = self._buffered.split(b"\n", 1)
        return _control.parse(raw)


async def _serve(fs: PowerCutFs, mount_point: str, commands: _Commands) -> bool:
    """Serve one mount until a cut or an unmount; whether to mount again if asked."""
    outcome = False
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pyfuse3.main)

        async def obey() -> None:
            nonlocal outcome
            outcome = await _obey(fs, mount_point, commands)

        nursery.start_soon(obey)
    return outcome


async def _obey(fs: PowerCutFs, mount_point: str, commands: _Commands) -> bool:
    """Follow the owner's commands until the mount is gone (the FUSE loop then ends)."""
    while True:
        command = await commands.next()
        if command is None:
            # The owner is gone: keep what was written, and leave no mount behind.
            fs.sync_all()
            fs.close()
            pyfuse3.terminate()
            return False
        kind, value = command
        if kind == "cut":
            report = fs.cut(value)
            pyfuse3.terminate()
            _say("cut", report.to_json())
            return True
        if kind == "unmount":
            # The kernel writes back what it still holds (mapped pages) while this loop
            # serves it; the unmount fails while a process has a file open there.
            done = await trio.run_process(
                ["fusermount3", "-u", mount_point], capture_stderr=True, check=False
            )
            if done.returncode != 0:
                _say("failed", f"could not unmount: {done.stderr.decode().strip()}")
                continue
            fs.sync_all()
            fs.close()
            _say("unmounted")
            return False
        _say("failed", f"{kind!r} is not a command while mounted")


def main(argv: list[str]) -> None:
    backing, mount_point = argv
    # A descriptor for each inode the kernel holds and for each directory a pending change
    # names: as many as the system allows.
    _, most = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))
    os.umask(0)  # modes come from the processes served, already masked by their umask
    commands = _Commands()
    while True:
        fs = PowerCutFs(backing)
        pyfuse3.init(fs, mount_point, set(OPTIONS))
        _say("mounted")
        try:
            again = trio.run(_serve, fs, mount_point, commands)
        finally:
            # After a cut the processes it served are dead: detach what is left. After an
            # unmount the mount is gone already.
            pyfuse3.close(unmount=True)
        if not again:
            return
        command = commands.next_blocking()
        if command is None:
            return
        if command[0] != "mount":
            _say("failed", f"{command[0]!r} is not a command while unmounted")
            return
