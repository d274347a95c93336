"""An installed app's log: the supervisor holds the file, the app only a pipe to it.

The app's stdout and stderr are the write end of a pipe; the supervisor copies what comes
out of it into `logs/<name>.log`, which it alone opened. So the app can neither truncate,
seek in nor grow its log without bound: past `cap` bytes (`Isolation.log_max`, 8 MiB) the
file is rotated to `<name>.log.1` (replacing the previous one) and a new one begun, so an
app's log never takes more than twice its cap on disk.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

import trio

CHUNK: Final = 65536


class AppLog:
    def __init__(self, path: Path, cap: int) -> None:
        self.path = path
        self.cap = cap
        self.read_fd, self.write_fd = os.pipe()  # both close-on-exec; the child gets a dup
        os.set_blocking(self.read_fd, False)
        self._fd = self._open()
        self._size = os.fstat(self._fd).st_size

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def write(self, data: bytes) -> None:
        if self._size and self._size + len(data) > self.cap:
            self._rotate()
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._size += len(data)

    def _rotate(self) -> None:
        os.close(self._fd)
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        self._fd = self._open()
        self._size = 0

    def started(self) -> None:
        """The child holds its copy of the write end now: ours goes, so that EOF comes
        when the last of the app's processes is gone."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    async def copy(self) -> None:
        """Copy the pipe into the file until EOF."""
        while self.read_fd >= 0:
            await trio.lowlevel.wait_readable(self.read_fd)
            if not self._read_once():
                return

    def _read_once(self) -> bool:
        """One read; False at EOF."""
        try:
            data = os.read(self.read_fd, CHUNK)
        except BlockingIOError:
            return True
        if data:
            self.write(data)
        return bool(data)

    def close(self) -> None:
        """Take what is in the pipe now (at most a pipe's worth more than once over: a
        writer that outlived the app gets no more of the file), and close."""
        if self.read_fd >= 0:
            for _ in range(64):
                try:
                    data = os.read(self.read_fd, CHUNK)
                except BlockingIOError:
                    break
                if not data:
                    break
                self.write(data)
            os.close(self.read_fd)
            self.read_fd = -1
        self.started()
        with contextlib.suppress(OSError):
            os.close(self._fd)
