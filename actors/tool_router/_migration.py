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

from actors.kernel import move_rows_once, older_rows

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
    source = Path(data_dir) / RUNTIME_DB

    def revision(db: sqlite3.Connection) -> None:
        """The highest revision the older file issued: never issued again."""
        found = older_rows(source, (("tool_state", ("name", "value")),)).get("tool_state")
        rows = [row for row in found[1] if row[0] == "revision"] if found else []
        db.executemany(
            "INSERT INTO tool_state (name, value) VALUES (?, ?) ON CONFLICT(name)"
            " DO UPDATE SET value = max(value, excluded.value)",
            rows,
        )

    also = revision if source.exists() else None
    what = "the tool router's rows"
    return move_rows_once(
        db, source, _TABLES, state_table="tool_state", mark=MOVED, log=log, what=what, also=also
    )
