"""The FUSE operations of the power-cut file system over a backing directory.

Data goes through `PendingData` (held until fsync), names through `PendingNames`
(straight to the backing tree, undone at a cut unless a directory fsync made them
durable); modes, owners and times go straight through. Every answer is computed afresh:
entries and attributes are cached by the kernel for 0 s and an open never keeps the page
cache, so what a process reads is what this file system holds. Handlers never await, so
each one runs whole before the next: the trio loop serialises them.

After `cut` every request fails with EIO until the mount is gone: nothing the kernel
still writes back can reach the backing directory.
"""

from __future__ import annotations

import errno
import functools
import os
import random
import stat
import traceback
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

import pyfuse3

from ._control import CutReport
from ._nodes import Node, Nodes, proc_path
from ._pending_names import GRAVES, Created, Graves, PendingNames, Removed, Renamed

P = ParamSpec("P")
R = TypeVar("R")


def _fuse_errors(
    handler: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """An OSError of the backing directory answers the request with its errno; after a
    cut, every request answers EIO, and so does any other failure."""

    @functools.wraps(handler)
    async def answer(*args: P.args, **kwargs: P.kwargs) -> R:
        fs = args[0]
        assert isinstance(fs, PowerCutFs)
        if fs.closed:
            raise pyfuse3.FUSEError(errno.EIO)
        try:
            return await handler(*args, **kwargs)
        except pyfuse3.FUSEError:
            raise
        except OSError as error:
            raise pyfuse3.FUSEError(error.errno or errno.EIO) from None
        except KeyError:  # an inode the kernel no longer holds
            raise pyfuse3.FUSEError(errno.ESTALE) from None
        except Exception:
            # A fault of this file system: said on its stderr, answered EIO, and the
            # mount goes on serving (a dead server would hang every process using it).
            traceback.print_exc()
            raise pyfuse3.FUSEError(errno.EIO) from None

    return answer


class PowerCutFs(pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False

    def __init__(self, backing: str) -> None:
        super().__init__()
        self._nodes = Nodes(backing)
        self._root_path = backing
        self._graves = Graves(self._nodes.root.fd)
        self._names = PendingNames(self._graves)
        self._as_root = os.geteuid() == 0
        self.closed = False

    # -- what a cut and an unmount do -------------------------------------------------

    def cut(self, seed: int | None) -> CutReport:
        """Drop what no fsync made durable: everything, or with a `seed` a random prefix
        of each file's changes (torn at 4 KiB) and of the changes of names."""
        rng = None if seed is None else random.Random(seed)
        kept = dropped = torn = 0
        files = self._nodes.with_pending()
        for node in files:
            assert node.pending is not None
            if rng is None:
                dropped += node.pending.changes()
            else:
                outcome = node.pending.keep(rng)
                kept += outcome.kept
                dropped += outcome.dropped
                torn += outcome.torn
            node.pending = None
        names = rng.randint(0, len(self._names)) if rng is not None else 0
        undone = self._names.keep(names)
        self.close()
        return CutReport(
            seed=seed,
            files=len(files),
            changes_kept=kept,
            changes_dropped=dropped,
            writes_torn=torn,
            names_kept=names,
            names_undone=undone,
        )

    def sync_all(self) -> None:
        """What a clean unmount does: everything becomes durable."""
        for node in self._nodes.with_pending():
            assert node.pending is not None
            node.pending.sync()
            node.pending = None
        self._names.sync_all()

    def close(self) -> None:
        self.closed = True
        self._graves.close()
        self._nodes.close()

    # -- attributes --------------------------------------------------------------------

    def _attributes(self, node: Node) -> pyfuse3.EntryAttributes:
        st = os.stat(node.fd)
        attributes = pyfuse3.EntryAttributes()
        attributes.st_ino = node.ino
        attributes.generation = 0
        attributes.entry_timeout = 0
        attributes.attr_timeout = 0
        attributes.st_mode = st.st_mode
        attributes.st_nlink = st.st_nlink
        attributes.st_uid = st.st_uid
        attributes.st_gid = st.st_gid
        attributes.st_rdev = st.st_rdev
        size = node.size()
        attributes.st_size = st.st_size if size is None else size
        attributes.st_blksize = st.st_blksize
        attributes.st_blocks = (attributes.st_size + 511) // 512
        attributes.st_atime_ns = st.st_atime_ns
        attributes.st_mtime_ns = st.st_mtime_ns
        attributes.st_ctime_ns = st.st_ctime_ns
        return attributes

    def _entry(self, parent: Node, name: bytes) -> pyfuse3.EntryAttributes:
        """The entry of `parent`/`name`, counted as one more lookup by the kernel."""
        node = self._nodes.at(parent, name)
        attributes = self._attributes(node)
        node.lookups += 1
        return attributes

    def _hidden(self, parent: Node, name: bytes) -> bool:
        return parent is self._nodes.root and name == GRAVES.encode()

    def _own(self, parent: Node, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        """A new entry belongs to whoever made it, as on any file system (this server
        runs as root, the processes it serves need not)."""
        if self._as_root:
            os.chown(name, ctx.uid, ctx.gid, dir_fd=parent.fd, follow_symlinks=False)

    @_fuse_errors
    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self._nodes[parent_inode]
        if self._hidden(parent, name):
            raise pyfuse3.FUSEError(errno.ENOENT)
        if name == b".." and parent is self._nodes.root:
            name = b"."
        return self._entry(parent, name)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        if self.closed:
            return
        for ino, count in inode_list:
            node = self._nodes.get(ino)
            if node is not None:
                node.lookups -= count
                self._nodes.release_if_unused(node)

    @_fuse_errors
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        return self._attributes(self._nodes[inode])

    @_fuse_errors
    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        node = self._nodes[inode]
        path = proc_path(node.fd)
        is_link = stat.S_ISLNK(node.mode)
        if fields.update_size:
            node.data().truncate(attr.st_size)
        if fields.update_mode and not is_link:
            os.chmod(path, stat.S_IMODE(attr.st_mode))
        if (fields.update_uid or fields.update_gid) and not is_link:
            uid = attr.st_uid if fields.update_uid else -1
            gid = attr.st_gid if fields.update_gid else -1
            os.chown(path, uid, gid)
        if (fields.update_atime or fields.update_mtime) and not is_link:
            st = os.stat(node.fd)
            atime = attr.st_atime_ns if fields.update_atime else st.st_atime_ns
            mtime = attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns
            os.utime(path, ns=(atime, mtime))
        return self._attributes(node)

    @_fuse_errors
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        vfs = os.statvfs(self._root_path)
        data = pyfuse3.StatvfsData()
        for name in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail"):
            setattr(data, name, getattr(vfs, name))
        for name in ("f_files", "f_ffree", "f_favail", "f_namemax"):
            setattr(data, name, getattr(vfs, name))
        return data

    @_fuse_errors
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        return os.fsencode(os.readlink("", dir_fd=self._nodes[inode].fd))

    # -- names -------------------------------------------------------------------------

    def _created(self, parent: Node, name: bytes, *, is_dir: bool) -> None:
        self._names.record(Created((parent.ino,), os.dup(parent.fd), name, is_dir))

    @_fuse_errors
    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self._nodes[parent_inode]
        os.mknod(name, mode, rdev, dir_fd=parent.fd)
        self._own(parent, name, ctx)
        self._created(parent, name, is_dir=False)
        return self._entry(parent, name)

    @_fuse_errors
    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self._nodes[parent_inode]
        os.mkdir(name, mode, dir_fd=parent.fd)
        self._own(parent, name, ctx)
        self._created(parent, name, is_dir=True)
        return self._entry(parent, name)

    @_fuse_errors
    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self._nodes[parent_inode]
        os.symlink(target, name, dir_fd=parent.fd)
        self._own(parent, name, ctx)
        self._created(parent, name, is_dir=False)
        return self._entry(parent, name)

    @_fuse_errors
    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        node = self._nodes[inode]
        parent = self._nodes[new_parent_inode]
        os.link(proc_path(node.fd), new_name, dst_dir_fd=parent.fd, follow_symlinks=True)
        self._created(parent, new_name, is_dir=False)
        return self._entry(parent, new_name)

    @_fuse_errors
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._nodes[parent_inode]
        if stat.S_ISDIR(os.stat(name, dir_fd=parent.fd, follow_symlinks=False).st_mode):
            raise pyfuse3.FUSEError(errno.EISDIR)
        self._remove(parent, name)

    @_fuse_errors
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._nodes[parent_inode]
        if not stat.S_ISDIR(os.stat(name, dir_fd=parent.fd, follow_symlinks=False).st_mode):
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        if os.listdir(os.path.join(proc_path(parent.fd), os.fsdecode(name))):
            raise pyfuse3.FUSEError(errno.ENOTEMPTY)
        self._remove(parent, name)

    def _remove(self, parent: Node, name: bytes) -> None:
        if self._hidden(parent, name):
            raise pyfuse3.FUSEError(errno.ENOENT)
        grave = self._graves.bury(parent.fd, name)
        self._names.record(Removed((parent.ino,), os.dup(parent.fd), name, grave))

    @_fuse_errors
    async def rename(  # noqa: PLR0917 - pyfuse3's signature
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        if flags & pyfuse3.RENAME_EXCHANGE:
            raise pyfuse3.FUSEError(errno.EINVAL)
        old = self._nodes[parent_inode_old]
        new = self._nodes[parent_inode_new]
        if self._hidden(old, name_old) or self._hidden(new, name_new):
            raise pyfuse3.FUSEError(errno.EACCES)
        moved = os.stat(name_old, dir_fd=old.fd, follow_symlinks=False)
        try:
            replaced = os.stat(name_new, dir_fd=new.fd, follow_symlinks=False)
        except FileNotFoundError:
            replaced = None
        grave = None
        if replaced is not None:
            if flags & pyfuse3.RENAME_NOREPLACE:
                raise pyfuse3.FUSEError(errno.EEXIST)
            if replaced.st_ino == moved.st_ino:
                return  # two names of one file: rename does nothing
            self._check_replace(moved, replaced, new, name_new)
            grave = self._graves.bury(new.fd, name_new)
        try:
            os.rename(name_old, name_new, src_dir_fd=old.fd, dst_dir_fd=new.fd)
        except OSError:
            if grave is not None:
                self._graves.restore(grave, new.fd, name_new)
            raise
        dirs = (old.ino,) if old is new else (old.ino, new.ino)
        self._names.record(Renamed(dirs, os.dup(old.fd), name_old, os.dup(new.fd), name_new, grave))

    @staticmethod
    def _check_replace(
        moved: os.stat_result, replaced: os.stat_result, new: Node, name_new: bytes
    ) -> None:
        """The checks rename(2) makes before replacing an entry, made here because the
        replaced entry is moved to the graves first."""
        if stat.S_ISDIR(moved.st_mode) and not stat.S_ISDIR(replaced.st_mode):
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        if not stat.S_ISDIR(moved.st_mode) and stat.S_ISDIR(replaced.st_mode):
            raise pyfuse3.FUSEError(errno.EISDIR)
        if stat.S_ISDIR(replaced.st_mode) and os.listdir(
            os.path.join(proc_path(new.fd), os.fsdecode(name_new))
        ):
            raise pyfuse3.FUSEError(errno.ENOTEMPTY)

    # -- directories -------------------------------------------------------------------

    @_fuse_errors
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        node = self._nodes[inode]
        node.opens += 1
        return inode

    @_fuse_errors
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        directory = self._nodes[fh]
        names = sorted(os.fsencode(name) for name in os.listdir(proc_path(directory.fd)))
        for index, name in enumerate(names[start_id:], start_id):
            if self._hidden(directory, name):
                continue
            try:
                node = self._nodes.at(directory, name)
            except FileNotFoundError:
                continue
            if not pyfuse3.readdir_reply(token, name, self._attributes(node), index + 1):
                self._nodes.release_if_unused(node)
                return
            node.lookups += 1

    async def releasedir(self, fh: int) -> None:
        if self.closed:
            return
        node = self._nodes[fh]
        node.opens -= 1
        self._nodes.release_if_unused(node)

    @_fuse_errors
    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        self._names.sync_dir(fh)

    # -- files -------------------------------------------------------------------------

    @_fuse_errors
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        node = self._nodes[inode]
        node.io()
        node.opens += 1
        if flags & os.O_TRUNC:
            node.data().truncate(0)
        return pyfuse3.FileInfo(fh=inode, keep_cache=False)

    @_fuse_errors
    async def create(
        self,
        parent_inode: int,
        name: bytes,
        mode: int,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        parent = self._nodes[parent_inode]
        try:
            os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode, dir_fd=parent.fd))
        except FileExistsError:
            if flags & os.O_EXCL:
                raise
        else:
            self._own(parent, name, ctx)
            self._created(parent, name, is_dir=False)
        attributes = self._entry(parent, name)
        info = await self.open(attributes.st_ino, flags, ctx)
        return info, self._attributes(self._nodes[attributes.st_ino])

    @_fuse_errors
    async def read(self, fh: int, off: int, size: int) -> bytes:
        node = self._nodes[fh]
        if node.pending is not None:
            return node.pending.read(off, size)
        return os.pread(node.io(), size, off)

    @_fuse_errors
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        self._nodes[fh].data().write(off, buf)
        return len(buf)

    @_fuse_errors
    async def fsync(self, fh: int, datasync: bool) -> None:
        node = self._nodes[fh]
        if node.pending is not None:
            node.pending.sync()
            node.pending = None

    async def flush(self, fh: int) -> None:
        pass

    async def release(self, fh: int) -> None:
        if self.closed:
            return
        node = self._nodes[fh]
        node.opens -= 1
        self._nodes.release_if_unused(node)
