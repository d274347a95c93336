"""The effectively-once helper for an actor's own store.

An actor records "message M applied" in the same SQLite transaction as M's effect. When M
is redelivered after a crash (at-least-once delivery), the record is found and the effect
is skipped, while the handler still re-emits its outputs, whose derived ids the mailbox
deduplicates.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

_TABLE = "lineup_applied"


def ensure_applied_table(db: sqlite3.Connection) -> None:
    db.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE} (id TEXT PRIMARY KEY) WITHOUT ROWID")


@contextmanager
def applied_once(db: sqlite3.Connection, message_id: str) -> Iterator[bool]:
    """A transaction that yields True the first time `message_id` is applied, else False.

    `db` must be in autocommit mode (`isolation_level=None`) so that this helper owns the
    transaction; the effect's writes inside the block commit with the record, or neither.
    """
    if db.isolation_level is not None:
        raise ValueError("`db` must be opened with isolation_level=None")
    db.execute("BEGIN IMMEDIATE")
    try:
        fresh = (
            db.execute(
                f"INSERT INTO {_TABLE} (id) VALUES (?) ON CONFLICT(id) DO NOTHING", (message_id,)
            ).rowcount
            == 1
        )
        yield fresh
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
