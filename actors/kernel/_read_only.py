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


def older_rows(
    source: Path, tables: tuple[tuple[str, tuple[str, ...]], ...]
) -> dict[str, tuple[list[str], list[tuple[object, ...]]]]:
    """The rows of `tables` (name, the columns wanted) in an older file, read-only: per
    table it has, the wanted columns it has (an older file may lack a later one) and its
    rows. What an actor copies into its own file from where an older runtime kept them."""
    old = open_read_only(source)
    try:
        have = {row[0] for row in old.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        found: dict[str, tuple[list[str], list[tuple[object, ...]]]] = {}
        for table, columns in tables:
            if table not in have:
                continue
            present = {row[1] for row in old.execute(f"PRAGMA table_info({table})")}
            names = [c for c in columns if c in present]
            rows = old.execute(f"SELECT {', '.join(names)} FROM {table}").fetchall()
            found[table] = (names, rows)
        return found
    finally:
        old.close()
