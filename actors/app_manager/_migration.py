"""A data dir from before the app manager had a database of its own kept the registry in
the store's `runtime.db` (tables `app_records`, `app_operations`, `app_instances`,
`app_settings`). The first time the app manager opens such a dir it copies them into
`app_manager.db`, in one transaction with a mark that it did (`registry_state`
`moved_from_runtime_db`), and says so in its log; `runtime.db` is only read, and nothing
writes those tables any more.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Final

from actors.kernel import move_rows_once

from ._rows import INSTANCE_COLUMNS, OPERATION_COLUMNS, RECORD_COLUMNS

log = logging.getLogger("lineup.app_manager")

RUNTIME_DB: Final = "runtime.db"  # the store's file, read once here and never written
MOVED: Final = "moved_from_runtime_db"
_TABLES: Final = (
    ("app_records", RECORD_COLUMNS),
    ("app_operations", OPERATION_COLUMNS),
    ("app_instances", INSTANCE_COLUMNS),
    ("app_settings", ("name", "value")),
)


def move_from_runtime_db(db: sqlite3.Connection, data_dir: Path) -> dict[str, int] | None:
    """Copy the registry's rows `runtime.db` holds into `db`, once per data dir: how many
    of each were moved, or None when that was done before (or there was nothing to move)."""
    source = Path(data_dir) / RUNTIME_DB
    return move_rows_once(
        db,
        source,
        _TABLES,
        state_table="registry_state",
        mark=MOVED,
        log=log,
        what="the app registry",
    )
