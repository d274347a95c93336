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

from actors.kernel import KeptReader, read_file

from ._db import DB_FILE
from ._rows import LIVE_STATES, OPERATION_COLUMNS, load_apps, operation_from_row


def no_apps() -> dict[str, Any]:
    return {"records": [], "operations": [], "instances": [], "settings": {}}


def view_version(value: Any) -> tuple[int, int]:
    """The version of the tool router's view of the apps, as the app manager sent or
    committed it (`[epoch, n]`: the epoch is raised, on disk, each time the app manager
    starts, n with each change), as a pair that orders them; (0, 0) for none. The tool
    router applies a view only if it is not older than the one it holds."""
    if isinstance(value, list | tuple) and len(value) == 2:
        epoch, n = value
        if isinstance(epoch, int) and isinstance(n, int):
            return epoch, n
    return 0, 0


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


class RegistryReader(KeptReader):
    """`app_manager.db` kept open read-only (`KeptReader`), for a reader that looks again
    and again: the web host's page sockets, the store's checks of live instances, the
    capability gateway."""

    def __init__(self, data_dir: str | Path) -> None:
        super().__init__(Path(data_dir) / DB_FILE)

    def apps(self, *, operations: int | None = None, ended: bool = True) -> dict[str, Any]:
        """As `read_apps`, from one snapshot of the file; a reader that looks at every
        change reads only what it shows (`load_apps`' `operations` and `ended`): the
        registry keeps up to a hundred of each."""
        db = self._open()
        if db is None:
            return no_apps()
        try:
            db.execute("BEGIN")
            try:
                return load_apps(db, operations=operations, ended=ended)
            finally:
                db.execute("COMMIT")
        except sqlite3.OperationalError:  # not written yet
            return no_apps()

    def live_instances(self, app_scope: str | None = None) -> list[tuple[str, str]]:
        """The live instances (of `app_scope`, or of every app): (instance id, conversation
        id), the one active last first."""
        db = self._open()
        if db is None:
            return []
        marks = ", ".join("?" * len(LIVE_STATES))
        scoped = "" if app_scope is None else " AND app_scope = ?"
        try:
            rows = db.execute(
                "SELECT instance_id, conversation_id FROM app_instances"
                f" WHERE state IN ({marks}){scoped} ORDER BY updated_ms DESC, rowid",
                (*sorted(LIVE_STATES), *([] if app_scope is None else [app_scope])),
            ).fetchall()
        except sqlite3.OperationalError:  # not written yet
            return []
        return [(str(i), str(c)) for i, c in rows]


__all__ = [
    "DB_FILE",
    "LIVE_STATES",
    "RegistryReader",
    "no_apps",
    "read_apps",
    "read_operation",
]
