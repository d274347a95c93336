"""Where `runtime.db` is, and how a reader opens it: read-only, without the writer's schema
tools (sqlite-utils, `_schema`), so that the command line's reads start fast."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

from actors.kernel import open_read_only

DB_FILE: Final = "runtime.db"


def open_readonly(data_dir: str | Path) -> sqlite3.Connection:
    """`runtime.db` for reading only (it must exist), in autocommit."""
    return open_read_only(Path(data_dir) / DB_FILE)
