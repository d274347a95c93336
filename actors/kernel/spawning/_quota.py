"""The size of an app's private directory, checked while it runs.

RLIMIT_FSIZE bounds each file the app writes (`Isolation.file_max`, 256 MiB); the total
(`Isolation.dir_max`, 1 GiB) is measured here: at the start of each incarnation and every
`interval` seconds (`dir_check_s`, 10 s), the bytes allocated below the directory
(symlinks not followed, each hard-linked inode once) are summed in a worker thread. Past
the quota the incarnation is failed with that reason (`its directory holds N bytes, over
its quota of Q`): killed, and restarted by its policy, which the same check fails again at
once until the restart intensity marks it failed. Between two checks an app may write past
its quota by what it writes in `interval` (each file still bounded by RLIMIT_FSIZE).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import trio


def directory_bytes(path: Path) -> int:
    """Bytes allocated on disk below `path` (st_blocks), each inode counted once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for top, dirs, files, top_fd in os.fwalk(path, follow_symlinks=False):
        del top, dirs
        for name in files:
            try:
                info = os.stat(name, dir_fd=top_fd, follow_symlinks=False)
            except OSError:
                continue  # removed meanwhile
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


async def watch_directory(
    path: Path, quota: int, interval: float, fail: Callable[[str], None]
) -> None:
    """Check now and every `interval` s; call `fail(reason)` once it is over `quota`."""
    while True:
        used = await trio.to_thread.run_sync(directory_bytes, path, abandon_on_cancel=True)
        if used > quota:
            fail(f"its directory holds {used} bytes, over its quota of {quota}")
            return
        await trio.sleep(interval)
