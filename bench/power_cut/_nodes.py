"""The inodes the kernel knows: each holds an `O_PATH` descriptor of its backing inode, so
that it stays the same file through renames and removals, and the unsynced writes of a
regular file.

A node's number is its backing inode's (the root's is FUSE's root number). A node lives
while the kernel looks it up or holds it open, and while it has unsynced writes: those
must survive the kernel forgetting the file until an fsync or a cut decides their fate.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

import pyfuse3

from ._pending_data import PendingData


def proc_path(fd: int) -> str:
    """A path that opens what `fd` (even an `O_PATH` one) refers to."""
    return f"/proc/self/fd/{fd}"


@dataclass
class Node:
    ino: int
    fd: int  # O_PATH, O_NOFOLLOW
    mode: int
    lookups: int = 0
    opens: int = 0
    io_fd: int | None = None  # read-write, opened at the first open of a regular file
    pending: PendingData | None = field(default=None, repr=False)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    def data(self) -> PendingData:
        """The unsynced state, begun at the first change after a sync."""
        if self.pending is None:
            self.pending = PendingData(self.io())
        return self.pending

    def io(self) -> int:
        if self.io_fd is None:
            self.io_fd = os.open(proc_path(self.fd), os.O_RDWR)
        return self.io_fd

    def size(self) -> int | None:
        return None if self.pending is None else self.pending.size

    def close(self) -> None:
        if self.io_fd is not None:
            os.close(self.io_fd)
        os.close(self.fd)


class Nodes:
    """Every node by number, and the rule for when one may go."""

    def __init__(self, root: str) -> None:
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY)
        root_stat = os.stat(root_fd)
        self._root_ino = root_stat.st_ino
        self.root = Node(pyfuse3.ROOT_INODE, root_fd, root_stat.st_mode, lookups=1)
        self._by_ino: dict[int, Node] = {self.root.ino: self.root}

    def __getitem__(self, ino: int) -> Node:
        return self._by_ino[ino]

    def get(self, ino: int) -> Node | None:
        return self._by_ino.get(ino)

    def number(self, backing_ino: int) -> int:
        return pyfuse3.ROOT_INODE if backing_ino == self._root_ino else backing_ino

    def at(self, parent: Node, name: bytes) -> Node:
        """The node of `parent`/`name` (found or made), its lookup count not yet raised."""
        st = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
        ino = self.number(st.st_ino)
        node = self._by_ino.get(ino)
        if node is None:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW, dir_fd=parent.fd)
            node = Node(ino, fd, st.st_mode)
            self._by_ino[ino] = node
        return node

    def release_if_unused(self, node: Node) -> None:
        if node is self.root or node.lookups > 0 or node.opens > 0 or node.pending is not None:
            return
        del self._by_ino[node.ino]
        node.close()

    def with_pending(self) -> list[Node]:
        return sorted(
            (node for node in self._by_ino.values() if node.pending is not None),
            key=lambda node: node.ino,
        )

    def close(self) -> None:
        for node in self._by_ino.values():
            node.close()
        self._by_ino.clear()
