"""Files replaced whole and durably: how every file that is not a database is written, in the
data dir and beside it (the AppServer's, the agent's, an app's private dir).

A power cut loses every write no `fsync` reached, and a create or a rename whose directory
was not fsynced. A file written and renamed into place without both may be empty, or gone,
after the cut, though every process saw it whole. `replace_file` writes a temporary file
beside the target, fsyncs it, renames it over the target and fsyncs the directory: after a
crash or a cut the name holds the old bytes or the new ones, whole, and once it returns,
the new ones.

Every file of the runtime that is not a database goes through `replace_file`:
`app_ids.json`, `.runtime_token`, `tool_policy.json`, `notifications.jsonl`, artifacts, the
AppServer's credentials and endpoint, the agent's cursor and inventories, an app's own
files such as draw and guess's rounds; `tests/power_cut/test_durable_files.py` holds every
rename in the product to it. The web host's files (`web/`) are one run's alone: a new run
begins without them, and an unreadable address is read as none.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def fsync_directory(path: str | Path) -> None:
    """Make the changes of names in directory `path` (creates, renames, removals) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(
    path: str | Path, data: bytes | str | Iterable[bytes], *, mode: int = 0o600
) -> None:
    """`path` holds `data` (bytes, text as UTF-8, or chunks written in order), with `mode`
    whatever the umask, whole or not at all, and durably once this returns. The temporary
    file is a hidden name beside `path` that no other writer picks; it is removed if the
    write fails."""
    target = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        try:
            os.fchmod(fd, mode)
            for chunk in _chunks(data):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_directory(target.parent)


def _chunks(data: bytes | str | Iterable[bytes]) -> Iterable[bytes]:
    if isinstance(data, str):
        return [data.encode()]
    if isinstance(data, bytes):
        return [data]
    return data
