"""What an actor's own SQLite file keeps beside it: a WAL near a mebibyte.

SQLite copies the WAL back every 1,000 pages and never cuts it, which leaves 4 MiB or more
beside each file however small it is. A file whose writer calls `bound_wal` has its WAL
copied back every `WAL_PAGES` pages and cut to `WAL_KEPT_BYTES` when it starts over.
"""

from __future__ import annotations

import sqlite3
from typing import Final

WAL_PAGES: Final = 256
WAL_KEPT_BYTES: Final = 1 << 20


def bound_wal(db: sqlite3.Connection) -> None:
    """Keep the WAL of the file `db` writes near `WAL_KEPT_BYTES`."""
    db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
    db.execute(f"PRAGMA journal_size_limit={WAL_KEPT_BYTES}")
