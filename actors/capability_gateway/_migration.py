"""A data dir from before the capability gateway had a database of its own kept its rows
in the store's `runtime.db` (tables `capability_requests`, `capability_grants`). The first
time the gateway opens such a dir it copies them into `capability_gateway.db`, in one
transaction with a mark that it did (`gateway_state` `moved_from_runtime_db`), and says so
in its log; `runtime.db` is only read, and nothing writes those tables any more.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Final

from actors.kernel import move_rows_once

from ._db import GRANT_COLUMNS, REQUEST_COLUMNS

log = logging.getLogger("lineup.capability_gateway")

RUNTIME_DB: Final = "runtime.db"  # the store's file, read once here and never written
MOVED: Final = "moved_from_runtime_db"
_TABLES: Final = (("capability_requests", REQUEST_COLUMNS), ("capability_grants", GRANT_COLUMNS))


def move_from_runtime_db(db: sqlite3.Connection, data_dir: Path) -> dict[str, int] | None:
    """Copy the capability rows `runtime.db` holds into `db`, once per data dir: how many
    of each were moved, or None when that was done before (or there was nothing to move)."""
    source = Path(data_dir) / RUNTIME_DB
    what = "the capability gateway's rows"
    return move_rows_once(
        db, source, _TABLES, state_table="gateway_state", mark=MOVED, log=log, what=what
    )
