"""Who uses a mount: every process with a file, a directory or a mapping on it.

A process is found by the device of what it holds, not by paths: an app in a mount
namespace of its own sees the same file system under another path, but the same device.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def users(mount_point: Path) -> set[int]:
    """The pids (other than this process's) holding anything on `mount_point`'s file
    system: their working or root directory, an open file, a mapped file."""
    device = os.stat(mount_point).st_dev
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):  # gone meanwhile, or a kernel thread
            if _holds(Path(entry.path), device):
                found.add(int(entry.name))
    return found


def _holds(process: Path, device: int) -> bool:
    held = [process / "cwd", process / "root"]
    held += list((process / "fd").iterdir())
    for path in held:
        with contextlib.suppress(OSError):
            if os.stat(path).st_dev == device:
                return True
    # A mapping names its device as hex major:minor in the fourth column.
    wanted = f"{os.major(device):02x}:{os.minor(device):02x}"
    for mapping in (process / "maps").read_text().splitlines():
        fields = mapping.split(maxsplit=5)
        if len(fields) == 6 and fields[3] == wanted:
            return True
    return False


def kill_users(mount_point: Path, *, timeout: float = 10.0) -> set[int]:
    """SIGKILL every process using `mount_point` (all at once, as a power cut stops them)
    and wait until none holds anything there; the pids killed. A process started by one
    of them meanwhile is killed as well."""
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    while remaining := users(mount_point):
        for pid in remaining:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed |= remaining
        if time.monotonic() > deadline:
            raise TimeoutError(f"processes {sorted(remaining)} still use {mount_point}")
        time.sleep(0.01)
    return killed
