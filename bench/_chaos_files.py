"""What a power cut left damaged in a data dir, looked at before the runtime starts on it
again: every SQLite file through `PRAGMA integrity_check`, every JSON file (and JSON-lines
file) and every key file parsed.

A database is checked on a copy, with its WAL, outside the data dir: opening it in place
would recover its WAL there and change what the runtime then finds. Logs are text a cut
may cut short, and `web/` is the web host's state of one run (its address, one-time keys,
sessions), which a new run begins without: neither is checked.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

SQLITE_MAGIC: Final = b"SQLite format 3\0"
NOT_CHECKED: Final = frozenset({"logs", "web"})
# A database's companions, checked with it.
COMPANIONS: Final = ("-wal", "-shm", "-journal")


def damaged_files(data_dir: Path) -> list[str]:
    """The files of `data_dir` (relative paths) that are not whole: a database that fails
    its integrity check, a JSON file that does not parse, an empty key or token."""
    damaged = []
    with tempfile.TemporaryDirectory(prefix="lineup-cut-check-") as scratch:
        for path in _files(data_dir):
            problem = _problem(path, Path(scratch))
            if problem:
                damaged.append(f"{path.relative_to(data_dir)}: {problem}")
    return damaged


def _files(root: Path) -> Iterator[Path]:
    """Every regular file under `root` (not a socket, not a link), but a database's
    companions and what is not checked."""
    for directory, subdirectories, files in os.walk(root):
        if Path(directory) == root:
            subdirectories[:] = [d for d in subdirectories if d not in NOT_CHECKED]
        for name in sorted(files):
            path = Path(directory) / name
            if not name.endswith(COMPANIONS) and stat.S_ISREG(path.lstat().st_mode):
                yield path


def _problem(path: Path, scratch: Path) -> str | None:
    """Why `path` is damaged, or None."""
    try:
        with open(path, "rb") as file:
            head = file.read(len(SQLITE_MAGIC))
        if head == SQLITE_MAGIC or path.suffix == ".db":
            return _database_problem(path, scratch)
        if path.suffix == ".json":
            json.loads(path.read_bytes())
        elif path.suffix == ".jsonl":
            for line in path.read_bytes().splitlines():
                json.loads(line)
        elif (path.name == ".runtime_token" or path.suffix in (".pub", ".key")) and not (
            path.read_bytes().strip()
        ):
            return "empty"
    except (OSError, ValueError) as exc:
        return str(exc)[:200]
    return None


def _database_problem(path: Path, scratch: Path) -> str | None:
    copy = scratch / "check.db"
    for suffix in ("", "-wal"):
        copy.with_name(copy.name + suffix).unlink(missing_ok=True)
        if Path(f"{path}{suffix}").exists():
            shutil.copyfile(f"{path}{suffix}", f"{copy}{suffix}")
    copy.with_name(copy.name + "-shm").unlink(missing_ok=True)
    db = sqlite3.connect(copy)
    try:
        rows = db.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return f"not a database: {exc}"
    finally:
        db.close()
    return None if rows == [("ok",)] else "; ".join(str(row[0]) for row in rows[:3])
