"""A process that commits to a SQLite database until it is killed: `python sqlite_writer.py
DB SYNCHRONOUS CHECKPOINT_PAGES`. The table is made at FULL, then every row (numbered on
from the largest there) is one transaction at SYNCHRONOUS, its number printed once
committed. The WAL is checkpointed every CHECKPOINT_PAGES pages: every few, and cuts fall
in checkpoints too."""

import sqlite3
import sys

db_path, synchronous, checkpoint_pages = sys.argv[1:]
db = sqlite3.connect(db_path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=FULL")
db.execute(f"PRAGMA wal_autocheckpoint={int(checkpoint_pages)}")
db.execute("CREATE TABLE IF NOT EXISTS rows (n INTEGER PRIMARY KEY, body BLOB)")
db.execute(f"PRAGMA synchronous={synchronous}")
n = db.execute("SELECT coalesce(max(n), 0) FROM rows").fetchone()[0]
while True:
    n += 1
    # Rows of a few pages each: a commit writes several WAL frames, which a cut can tear.
    db.execute("INSERT INTO rows VALUES (?, ?)", (n, bytes([n % 251]) * 9000))
    print(n, flush=True)
