"""One file's writes and truncates since its last fsync: what the power takes with it.

The backing file holds only what was synced. On top of it: the file's size now, the
dirty 4 KiB pages as they read now, and `floor`, the lowest size a truncate reached since
the sync (backing bytes at or past it read as zeros, as a truncate left them). Reads
assemble pages from both; `sync` writes the log of changes to the backing file in order,
and `keep` writes only a prefix of it, the last change torn at 4 KiB if it was a write.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

PAGE = 4096


@dataclass(frozen=True)
class Write:
    offset: int
    data: bytes

    def pieces(self) -> int:
        """How many 4 KiB-aligned pieces of the file the write covers: where it tears."""
        first = self.offset // PAGE
        last = (self.offset + len(self.data) - 1) // PAGE
        return last - first + 1

    def torn(self, pieces: int) -> Write:
        """The first `pieces` of the write, cut at a 4 KiB boundary of the file."""
        end = (self.offset // PAGE + pieces) * PAGE
        return Write(self.offset, self.data[: max(0, end - self.offset)])


@dataclass(frozen=True)
class Truncate:
    size: int


Change = Write | Truncate


@dataclass(frozen=True)
class Kept:
    """What one file's cut kept: changes kept whole, changes dropped, and whether the
    first dropped one was a write of which a prefix was kept (torn)."""

    kept: int
    dropped: int
    torn: bool


class PendingData:
    """The unsynced state of one regular file over its backing file (`fd`, read-write)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.size = os.fstat(fd).st_size
        self._floor = self.size
        self._pages: dict[int, bytearray] = {}
        self._log: list[Change] = []

    def read(self, offset: int, length: int) -> bytes:
        end = min(offset + length, self.size)
        if offset >= end:
            return b""
        out = bytearray()
        page = offset // PAGE
        while page * PAGE < end:
            start = max(offset, page * PAGE)
            stop = min(end, (page + 1) * PAGE)
            dirty = self._pages.get(page)
            if dirty is not None:
                out += dirty[start - page * PAGE : stop - page * PAGE]
            else:
                out += self._synced(start, stop)
            page += 1
        return bytes(out)

    def write(self, offset: int, data: bytes) -> None:
        if not data:
            return
        self._log.append(Write(offset, bytes(data)))
        end = offset + len(data)
        page = offset // PAGE
        while page * PAGE < end:
            base = page * PAGE
            dirty = self._page(page)
            start = max(offset, base)
            stop = min(end, base + PAGE)
            dirty[start - base : stop - base] = data[start - offset : stop - offset]
            page += 1
        self.size = max(self.size, end)

    def truncate(self, size: int) -> None:
        self._log.append(Truncate(size))
        if size < self.size:
            # Dirty pages past the new end go; the one it cuts keeps zeros after it, so
            # that growing the file again reads zeros there, as on any file system.
            for page in [page for page in self._pages if page * PAGE >= size]:
                del self._pages[page]
            cut = self._pages.get(size // PAGE)
            if cut is not None:
                cut[size % PAGE :] = bytes(PAGE - size % PAGE)
            self._floor = min(self._floor, size)
        self.size = size

    def sync(self) -> None:
        """Write every change to the backing file: what fsync makes durable."""
        self._apply(self._log)

    def keep(self, rng: random.Random) -> Kept:
        """Write a random prefix of the changes, the first left out torn at 4 KiB if it is
        a write, and drop the rest: what a power cut leaves of this file."""
        kept = rng.randint(0, len(self._log))
        changes = self._log[:kept]
        torn = False
        if kept < len(self._log):
            first_lost = self._log[kept]
            if isinstance(first_lost, Write) and first_lost.pieces() > 1:
                pieces = rng.randint(1, first_lost.pieces() - 1)
                changes = [*changes, first_lost.torn(pieces)]
                torn = True
        self._apply(changes)
        return Kept(kept=kept, dropped=len(self._log) - kept, torn=torn)

    def changes(self) -> int:
        return len(self._log)

    def _apply(self, changes: list[Change]) -> None:
        for change in changes:
            if isinstance(change, Write):
                os.pwrite(self._fd, change.data, change.offset)
            else:
                os.ftruncate(self._fd, change.size)

    def _page(self, page: int) -> bytearray:
        dirty = self._pages.get(page)
        if dirty is None:
            base = page * PAGE
            dirty = bytearray(self._synced(base, min(base + PAGE, self.size)).ljust(PAGE, b"\0"))
            self._pages[page] = dirty
        return dirty

    def _synced(self, start: int, stop: int) -> bytes:
        """Bytes `start`..`stop` where no dirty page covers them: the backing file's below
        the floor, zeros from there on."""
        below = min(stop, self._floor)
        data = os.pread(self._fd, below - start, start) if below > start else b""
        return data.ljust(stop - start, b"\0")
