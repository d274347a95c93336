"""A data dir on a small file system of its own, and the ballast that fills it: how the
tests meet a full laptop disk. Mounting a tmpfs needs root, as CI runs."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def small_disk(where: Path, size_mib: int) -> Iterator[Path]:
    """`where` (made here) on a tmpfs of `size_mib` MiB; unmounted lazily at the end, after
    which a runtime's own teardown still finds its open files."""
    where.mkdir(parents=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "lineup-test", where]
    done = subprocess.run(mount, capture_output=True, check=False)
    assert done.returncode == 0, f"mounting a tmpfs needs root: {done.stderr.decode()}"
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", where], capture_output=True, check=False)


def fill(ballast: Path) -> None:
    """Write until the file system refuses: ENOSPC, as a full laptop disk."""
    with open(ballast, "wb", buffering=0) as out, contextlib.suppress(OSError):
        while out.write(b"\0" * (1 << 20)):
            pass
