"""Hand edits of the tool policy, noticed as they happen and never looked for.

The user (or an organisation's tooling) may write `DATA_DIR/tool_policy.json` by hand while
the runtime runs. The tool router watches the data dir with Linux's inotify for that one
name being written and closed, renamed in or out, or deleted, and reads the file again
then, never while a writer has it open (a file being created is still empty); an idle
runtime is not woken to look. Where inotify cannot be had (another
kernel, the user's watch limit reached), it looks once a second instead, as a poll would.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import trio

log = logging.getLogger("lineup.tool_router")

LOOK_S: Final = 1.0  # without inotify: how often the file is looked at

_IN_CLOSE_WRITE: Final = 0x0000_0008
_IN_MOVED_FROM: Final = 0x0000_0040
_IN_MOVED_TO: Final = 0x0000_0080
_IN_DELETE: Final = 0x0000_0200
_IN_Q_OVERFLOW: Final = 0x0000_4000  # events were lost: look anyway
_IN_NONBLOCK: Final = 0o0004000
_IN_CLOEXEC: Final = 0o2000000
_WATCHED: Final = _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_DELETE
_EVENT: Final = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of name


def _inotify_on(folder: Path) -> int | None:
    """An inotify descriptor watching `folder`, or None where there is none to be had."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    except (OSError, AttributeError):
        return None
    if fd < 0:
        log.warning("no inotify (%s): the tool policy is looked at every second", _errno())
        return None
    if libc.inotify_add_watch(fd, os.fsencode(folder), _WATCHED) < 0:
        log.warning(
            "cannot watch %s (%s): the tool policy is looked at every second", folder, _errno()
        )
        os.close(fd)
        return None
    return fd


def _errno() -> str:
    code = ctypes.get_errno()
    return errno.errorcode.get(code, str(code))


def names_in(events: bytes) -> tuple[set[str], bool]:
    """The file names a read of inotify events tells of, and whether events were lost."""
    names: set[str] = set()
    lost = False
    at = 0
    while at + _EVENT.size <= len(events):
        _, mask, _, size = _EVENT.unpack_from(events, at)
        at += _EVENT.size
        lost = lost or bool(mask & _IN_Q_OVERFLOW)
        if size:
            names.add(os.fsdecode(events[at : at + size].rstrip(b"\0")))
        at += size
    return names, lost


async def changes_of(folder: Path, name: str) -> AsyncIterator[None]:
    """Yields each time the file `name` in `folder` may have changed (never in between)."""
    fd = _inotify_on(folder)
    if fd is None:
        while True:
            await trio.sleep(LOOK_S)
            yield
    try:
        while True:
            await trio.lowlevel.wait_readable(fd)
            try:
                events = os.read(fd, 64 * 1024)
            except BlockingIOError:
                continue
            names, lost = names_in(events)
            if lost or name in names:
                yield
    finally:
        trio.lowlevel.notify_closing(fd)
        os.close(fd)
