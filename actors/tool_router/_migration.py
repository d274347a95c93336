"""A data dir from before the tool router had a database of its own kept its rows in the
store's `runtime.db` (tables `tool_calls`, `tool_deadlines`, `tool_inventories`,
`tool_state`). The first time the tool router opens such a dir it copies them into
`tool_router.db`, in one transaction with a mark that it did (`tool_state`
`moved_from_runtime_db`), and says so in its log; `runtime.db` is only read, and nothing
writes those tables any more.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Final

from actors.kernel import older_rows

from ._db import CALL_COLUMNS, DEADLINE_COLUMNS, INVENTORY_COLUMNS

log = logging.getLogger("lineup.tool_router")

RUNTIME_DB: Final = "runtime.db"  # the store's file, read once here and never written
MOVED: Final = "moved_from_runtime_db"
_TABLES: Final = (
    ("tool_calls", CALL_COLUMNS),
    ("tool_deadlines", DEADLINE_COLUMNS),
    ("tool_inventories", INVENTORY_COLUMNS),
)


def move_from_runtime_db(db: sqlite3.Connection, data_dir: Path) -> dict[str, int] | None:
    """Copy the tool rows `runtime.db` holds into `db`, once per data dir: how many of each
    were moved, or None when that was done before (or there was nothing to move)."""
    if db.execute("SELECT 1 FROM tool_state WHERE name = ?", (MOVED,)).fetchone():
        return None
    source = Path(data_dir) / RUNTIME_DB
    found = _read_old(source) if source.exists() else {}
    moved: dict[str, int] = {}
    db.execute("BEGIN IMMEDIATE")
    try:
        for table, (names, rows) in found.items():
            if table == "tool_state":
                db.executemany(
                    "INSERT INTO tool_state (name, value) VALUES (?, ?) ON CONFLICT(name)"
                    " DO UPDATE SET value = max(value, excluded.value)",
                    rows,
                )
                continue
            marks = ", ".join("?" * len(names))
            before = db.total_changes
            db.executemany(
                f"INSERT OR IGNORE INTO {table} ({', '.join(names)}) VALUES ({marks})", rows
            )
            moved[table] = db.total_changes - before
        db.execute(
            "INSERT INTO tool_state (name, value) VALUES (?, ?)", (MOVED, sum(moved.values()))
        )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    if not any(moved.values()):
        return None
    log.info(
        "moved the tool router's rows from runtime.db into tool_router.db: %s",
        ", ".join(f"{count} {table}" for table, count in moved.items()),
    )
    return moved


def _read_old(source: Path) -> dict[str, tuple[list[str], list[tuple[object, ...]]]]:
    """The tool tables of an old `runtime.db`, read-only: per table, its columns (those
    the tool router keeps, an older file may lack a later one) and rows."""
    found = older_rows(source, _TABLES)
    revision = older_rows(source, (("tool_state", ("name", "value")),)).get("tool_state")
    if revision is not None:
        names, rows = revision
        found["tool_state"] = (names, [row for row in rows if row[0] == "revision"])
    return found
