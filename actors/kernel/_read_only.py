"""An actor's own SQLite file, opened read-only by a reader outside it (the command line,
the web host, a bench), whether the runtime is up or not."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

T = TypeVar("T")


def open_read_only(path: Path, *, any_thread: bool = False) -> sqlite3.Connection:
    """The file at `path` (it must exist) for reading only, in autocommit; a writer's lock
    is waited for up to 10 s. With `any_thread`, a connection kept for a reader that reads
    from worker threads, one at a time."""
    return sqlite3.connect(
        f"file:{path}?mode=ro",
        uri=True,
        isolation_level=None,
        timeout=10,
        check_same_thread=not any_thread,
    )


class KeptReader:
    """An actor's file kept open read-only, for a reader that looks again and again (the
    web host's page sockets, the store's checks of live instances): a connection's first
    statement reads the schema, so a read on a fresh connection costs several times what it
    costs on a kept one. One caller at a time, from any thread; no file yet reads as none."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db: sqlite3.Connection | None = None
        self.seen: int | None = None

    def _open(self) -> sqlite3.Connection | None:
        if self.db is None and self.path.exists():
            self.db = open_read_only(self.path, any_thread=True)
        return self.db

    def changed(self) -> bool:
        """Whether the file was written since the last call (SQLite's `data_version`)."""
        db = self._open()
        if db is None:
            return False
        try:
            version = int(db.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error:
            self.close()
            return True
        changed, self.seen = version != self.seen, version
        return changed

    def close(self) -> None:
        # A version is only comparable within one connection: a new one starts afresh.
        self.seen = None
        if self.db is not None:
            self.db.close()
            self.db = None


# What SQLite says of a file from before the tables or columns read were added.
_NOT_YET: Final = ("no such table", "no such column")


def read_file(path: Path, read: Callable[[sqlite3.Connection], T], empty: T) -> T:
    """What `read` finds in the file at `path`; `empty` where there is no file yet, or the
    file is from before the tables read were added. Any other failure is raised: a file
    that cannot be read is not an empty one."""
    if not path.exists():
        return empty
    db = open_read_only(path)
    try:
        return read(db)
    except sqlite3.OperationalError as exc:
        if str(exc).startswith(_NOT_YET):
            return empty
        raise
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


def move_rows_once(
    db: sqlite3.Connection,
    source: Path,
    tables: tuple[tuple[str, tuple[str, ...]], ...],
    *,
    state_table: str,
    mark: str,
    log: logging.Logger,
    what: str,
    also: Callable[[sqlite3.Connection], None] | None = None,
) -> dict[str, int] | None:
    """Copy the rows of `tables` an older file (`source`, only read) holds into the actor's
    own `db`, once: in one transaction with `also` (what else the move takes) and the mark
    `mark` in `state_table` (name, value) that it was done; a move that took rows is said
    in `log` ("moved `what` from ... into ..."). How many rows of each table were moved, or
    None when that was done before or there was nothing to move."""
    if db.execute(f"SELECT 1 FROM {state_table} WHERE name = ?", (mark,)).fetchone():
        return None
    found = older_rows(source, tables) if source.exists() else {}
    moved: dict[str, int] = {}
    db.execute("BEGIN IMMEDIATE")
    try:
        for table, (names, rows) in found.items():
            before = db.total_changes
            db.executemany(
                f"INSERT OR IGNORE INTO {table} ({', '.join(names)})"
                f" VALUES ({', '.join('?' * len(names))})",
                rows,
            )
            moved[table] = db.total_changes - before
        if also is not None:
            also(db)
        db.execute(
            f"INSERT INTO {state_table} (name, value) VALUES (?, ?)", (mark, sum(moved.values()))
        )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    if not any(moved.values()):
        return None
    into = Path(db.execute("PRAGMA database_list").fetchone()[2]).name
    counts = ", ".join(f"{count} {table}" for table, count in moved.items())
    log.info("moved %s from %s into %s: %s", what, source.name, into, counts)
    return moved
