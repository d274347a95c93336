"""An actor's own SQLite file, opened read-only by a reader outside it (the command line,
the web host, a bench), whether the runtime is up or not."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def open_read_only(path: Path) -> sqlite3.Connection:
    """The file at `path` (it must exist) for reading only, in autocommit; a writer's lock
    is waited for up to 10 s."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=10)


def read_file(path: Path, read: Callable[[sqlite3.Connection], T], empty: T) -> T:
    """What `read` finds in the file at `path`; `empty` where there is no file yet, or the
    file is from before the tables read were added."""
    if not path.exists():
        return empty
    db = open_read_only(path)
    try:
        return read(db)
    except sqlite3.OperationalError:
        return empty
    finally:
        db.close()
