"""The creates, links, renames and removals no directory fsync has made durable yet.

Names go straight through to the backing directory, so the tree there is always the tree
the processes see; what a power cut would undo is kept here, in the order it happened,
with what undoing each change needs: a removed (or replaced) entry is moved into the
graves directory instead of deleted, so that its synced content can come back.

A directory's fsync makes durable every change that touches one of its entries and,
with it, every change before that one: names are journaled in order, as on the file
systems Linux runs on, so what survives a cut is always a prefix of the changes, a state
the tree really had. An fsync of a file makes none of its names durable.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

GRAVES = ".power-cut-graves"


class Graves:
    """Where removed entries wait until their removal is durable: a directory of the
    backing tree (the same file system, so moving an entry there keeps its inode),
    hidden from the mount."""

    def __init__(self, root_fd: int) -> None:
        self._root_fd = root_fd
        self._path = Path(f"/proc/self/fd/{root_fd}") / GRAVES
        # Left by a server that ended without a cut or an unmount: its removals stand.
        shutil.rmtree(self._path, ignore_errors=True)
        os.mkdir(GRAVES, 0o700, dir_fd=root_fd)
        self.fd = os.open(GRAVES, os.O_PATH | os.O_DIRECTORY, dir_fd=root_fd)
        self._count = 0

    def bury(self, dir_fd: int, name: bytes) -> bytes:
        self._count += 1
        grave = b"%d" % self._count
        os.rename(name, grave, src_dir_fd=dir_fd, dst_dir_fd=self.fd)
        return grave

    def restore(self, grave: bytes, dir_fd: int, name: bytes) -> None:
        os.rename(grave, name, src_dir_fd=self.fd, dst_dir_fd=dir_fd)

    def clear(self, grave: bytes) -> None:
        path = self._path / os.fsdecode(grave)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()

    def close(self) -> None:
        os.close(self.fd)
        with contextlib.suppress(OSError):
            os.rmdir(GRAVES, dir_fd=self._root_fd)


@dataclass
class Created:
    """A file, directory, symlink, socket or hard link that appeared at `dir`/`name`."""

    dirs: tuple[int, ...]
    dir_fd: int
    name: bytes
    is_dir: bool

    def undo(self, graves: Graves) -> None:
        if self.is_dir:
            os.rmdir(self.name, dir_fd=self.dir_fd)
        else:
            os.unlink(self.name, dir_fd=self.dir_fd)

    def settle(self, graves: Graves) -> None:
        pass

    def close(self) -> None:
        os.close(self.dir_fd)


@dataclass
class Removed:
    """An entry unlinked (or a directory removed), waiting in `grave`."""

    dirs: tuple[int, ...]
    dir_fd: int
    name: bytes
    grave: bytes

    def undo(self, graves: Graves) -> None:
        graves.restore(self.grave, self.dir_fd, self.name)

    def settle(self, graves: Graves) -> None:
        graves.clear(self.grave)

    def close(self) -> None:
        os.close(self.dir_fd)


@dataclass
class Renamed:
    """`old_dir`/`old_name` moved to `new_dir`/`new_name`; what it replaced waits in
    `grave`."""

    dirs: tuple[int, ...]
    old_dir_fd: int
    old_name: bytes
    new_dir_fd: int
    new_name: bytes
    grave: bytes | None

    def undo(self, graves: Graves) -> None:
        os.rename(
            self.new_name, self.old_name, src_dir_fd=self.new_dir_fd, dst_dir_fd=self.old_dir_fd
        )
        if self.grave is not None:
            graves.restore(self.grave, self.new_dir_fd, self.new_name)

    def settle(self, graves: Graves) -> None:
        if self.grave is not None:
            graves.clear(self.grave)

    def close(self) -> None:
        os.close(self.old_dir_fd)
        os.close(self.new_dir_fd)


NameChange = Created | Removed | Renamed


class PendingNames:
    """The changes of names since the directories' last fsyncs, oldest first."""

    def __init__(self, graves: Graves) -> None:
        self._graves = graves
        self._changes: list[NameChange] = []

    def record(self, change: NameChange) -> None:
        self._changes.append(change)

    def sync_dir(self, directory: int) -> None:
        """The fsync of `directory` (its inode): its changes and all before them are
        durable."""
        last = max(
            (i for i, change in enumerate(self._changes) if directory in change.dirs),
            default=-1,
        )
        self._settle(last + 1)

    def sync_all(self) -> None:
        self._settle(len(self._changes))

    def keep(self, count: int) -> int:
        """Keep the first `count` changes and undo the rest, newest first: what a cut
        leaves. Returns how many were undone."""
        undone = self._changes[count:]
        for change in reversed(undone):
            change.undo(self._graves)
            change.close()
        del self._changes[count:]
        self._settle(count)
        return len(undone)

    def __len__(self) -> int:
        return len(self._changes)

    def _settle(self, count: int) -> None:
        for change in self._changes[:count]:
            change.settle(self._graves)
            change.close()
        del self._changes[:count]
