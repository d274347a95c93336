"""The chaos soak's small disk: a tmpfs its ballast fills to the last byte, whatever room
the runtime's own files left on it, without the bench failing."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from bench._chaos_world import SmallDisk


def test_the_ballast_fills_the_disk_whatever_room_is_left(tmp_path: Path) -> None:
    disk = SmallDisk.mount(tmp_path / "disk", minutes=0.25)
    assert disk is not None, "mounting a tmpfs needs root"
    try:
        # Room left that is no whole number of the ballast's chunks.
        (disk.mount_point / "runtime-files").write_bytes(b"x" * 123_457)
        free = os.statvfs(disk.mount_point).f_bavail * os.statvfs(disk.mount_point).f_frsize
        written = disk.fill()
        assert 0 < written <= free
        assert os.statvfs(disk.mount_point).f_bavail == 0
        disk.free()
        assert os.statvfs(disk.mount_point).f_bavail > 0
        # Full already (the runtime's files took the room): nothing to write, no failure.
        grown = disk.mount_point / "grown"
        with open(grown, "wb", buffering=0) as out, contextlib.suppress(OSError):
            while out.write(b"\0" * 65_536):
                pass
        assert disk.fill() == 0
    finally:
        disk.unmount()
