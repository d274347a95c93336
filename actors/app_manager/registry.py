"""The app registry as the app manager last committed it, read-only: for the command line,
the web host, and the actors that judge by the registry as it is now (the router and the
tool router when they start, the capability gateway at each request, the store for an
app's live instances). Only the app manager writes `app_manager.db` (`_db`); a reader here
never does, and finds an empty registry where the file is not there yet.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from actors.kernel import open_read_only, read_file

from ._db import DB_FILE
from ._rows import LIVE_STATES, OPERATION_COLUMNS, load_apps, operation_from_row


def no_apps() -> dict[str, Any]:
    return {"records": [], "operations": [], "instances": [], "settings": {}}


def read_apps(data_dir: str | Path) -> dict[str, Any]:
    """Records, operations, instances and settings (read-only, runtime up or not)."""
    return read_file(Path(data_dir) / DB_FILE, load_apps, no_apps())


def read_operation(data_dir: str | Path, operation_id: str) -> dict[str, Any] | None:
    """One app operation's row (what `lineup app ...` follows to its end), or None."""

    def one(db: sqlite3.Connection) -> dict[str, Any] | None:
        row = db.execute(
            f"SELECT {', '.join(OPERATION_COLUMNS)} FROM app_operations WHERE operation_id = ?",
            (operation_id,),
        ).fetchone()
        return operation_from_row(row) if row else None

    return read_file(Path(data_dir) / DB_FILE, one, None)


class RegistryReader:
    """`app_manager.db` kept open read-only, for a reader that looks again and again (the
    web host's page sockets, the store's checks of live instances, the capability gateway):
    a connection's first statement reads the schema, so a read on a fresh connection costs
    several times what it costs on a kept one. One caller at a time, from any thread."""

    def __init__(self, data_dir: str | Path) -> None:
        self.path = Path(data_dir) / DB_FILE
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

    def apps(self) -> dict[str, Any]:
        """As `read_apps`, all of it from one snapshot of the file."""
        db = self._open()
        if db is None:
            return no_apps()
        try:
            db.execute("BEGIN")
            try:
                return load_apps(db)
            finally:
                db.execute("COMMIT")
        except sqlite3.OperationalError:  # not written yet
            return no_apps()

    def live_instances(self, app_scope: str) -> list[tuple[str, str]]:
        """The live instances of `app_scope`: (instance id, conversation id), the one
        active last first."""
        db = self._open()
        if db is None:
            return []
        marks = ", ".join("?" * len(LIVE_STATES))
        try:
            rows = db.execute(
                "SELECT instance_id, conversation_id FROM app_instances"
                f" WHERE app_scope = ? AND state IN ({marks}) ORDER BY updated_ms DESC, rowid",
                (app_scope, *sorted(LIVE_STATES)),
            ).fetchall()
        except sqlite3.OperationalError:  # not written yet
            return []
        return [(str(i), str(c)) for i, c in rows]

    def live_instance_ids(self) -> list[str]:
        """Every live instance's id."""
        db = self._open()
        if db is None:
            return []
        marks = ", ".join("?" * len(LIVE_STATES))
        try:
            rows = db.execute(
                f"SELECT instance_id FROM app_instances WHERE state IN ({marks})",
                sorted(LIVE_STATES),
            ).fetchall()
        except sqlite3.OperationalError:  # not written yet
            return []
        return [str(row[0]) for row in rows]

    def close(self) -> None:
        # A version is only comparable within one connection: a new one starts afresh.
        self.seen = None
        if self.db is not None:
            self.db.close()
            self.db = None


__all__ = [
    "DB_FILE",
    "LIVE_STATES",
    "RegistryReader",
    "no_apps",
    "read_apps",
    "read_operation",
]
