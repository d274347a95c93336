"""The store's upkeep: what `runtime.db` keeps of its own records, and its WAL.

Two things grow with every request and are bounded here:

- **Request records** (`requests` and the applied ids): the newest `REQUESTS_KEPT`. A
  request comes again as a mailbox redelivery (its row still live: among the newest), as a
  replayed sender's copy (dropped by the mailbox, which keeps every done row younger than
  a message handed out and not acked), or from a sender's own records after a restart
  (an app's unanswered actions): the records cover those for the newest 10,000 requests,
  days of a person's use, minutes of the soak bench's load.
- **Audit**: the newest `AUDIT_KEPT` rows, none older than `AUDIT_KEPT_DAYS`. A person's
  routine actions (`FOLDED_CODES`: an action in an app's UI, a host intent) are recorded by
  kind, app and session: the same one again within `FOLD_WINDOW_MS` of a recent row's first
  is counted on that row (`repeats`, `last_ms`) instead of taking a row of its own, so the
  audit grows with the minutes a person acts, not with every keystroke sent. Refusals and
  every other code keep a row each.

The conversation (`messages`) is the user's and is never pruned here.

Upkeep is due by writes, never by a poll: after `UPKEEP_EVERY` applied requests a pass
deletes what is past the bounds in chunks of `CHUNK` rows, each its own short
transaction, giving handlers their turn between chunks. Once no request came for
`IDLE_S`, the WAL is copied back and cut to nothing. An idle store does nothing.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import Final

import trio

log = logging.getLogger("lineup.store")

REQUESTS_KEPT: Final = 10_000
AUDIT_KEPT: Final = 20_000
AUDIT_KEPT_DAYS: Final = 90
UPKEEP_EVERY: Final = 2_000
CHUNK: Final = 500
IDLE_S: Final = 30.0
_APPLIED: Final = "lineup_applied"
FOLDED_CODES: Final = frozenset({"ui.action", "host.intent"})
FOLD_WINDOW_MS: Final = 60_000
FOLD_LOOKBACK: Final = 16  # the newest rows looked at for one to count an action on


def write_audit(
    db: sqlite3.Connection,
    code: str,
    detail: str,
    *,
    message_id: str | None,
    seq: int | None,
    source: str,
    now_ms: int,
) -> None:
    """One audit row, or a routine action counted on a recent row recording the same."""
    if code in FOLDED_CODES and _fold_into_recent(db, code, detail, source, now_ms):
        return
    db.execute(
        "INSERT INTO audit (at_ms, code, detail, message_id, seq, source, repeats, last_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
        (now_ms, code, detail, message_id, seq, source, now_ms),
    )


def _fold_into_recent(
    db: sqlite3.Connection, code: str, detail: str, source: str, now_ms: int
) -> bool:
    """Count this action on one of the newest audit rows recording the same action (code,
    detail, source) first seen within `FOLD_WINDOW_MS`; False if there is none."""
    row = db.execute(
        "SELECT pos FROM (SELECT pos, at_ms, code, detail, source FROM audit"
        " ORDER BY pos DESC LIMIT ?) WHERE code = ? AND detail = ? AND source = ?"
        " AND at_ms >= ? ORDER BY pos DESC LIMIT 1",
        (FOLD_LOOKBACK, code, detail, source, now_ms - FOLD_WINDOW_MS),
    ).fetchone()
    if row is None:
        return False
    db.execute(
        "UPDATE audit SET repeats = coalesce(repeats, 1) + 1, last_ms = ? WHERE pos = ?",
        (now_ms, row[0]),
    )
    return True


def prune_requests_chunk(db: sqlite3.Connection, keep: int = REQUESTS_KEPT) -> int:
    """Forget up to `CHUNK` of the oldest request records past the newest `keep`, with
    their applied ids, in one transaction; how many went."""
    db.execute("BEGIN IMMEDIATE")
    try:
        gone = db.execute(
            "DELETE FROM requests WHERE rowid IN (SELECT rowid FROM requests WHERE rowid <="
            " (SELECT max(rowid) FROM requests) - ? ORDER BY rowid LIMIT ?) RETURNING id",
            (keep, CHUNK),
        ).fetchall()
        db.executemany(f"DELETE FROM {_APPLIED} WHERE id = ?", gone)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return len(gone)


def prune_audit_chunk(
    db: sqlite3.Connection, keep: int = AUDIT_KEPT, days: float = AUDIT_KEPT_DAYS
) -> int:
    """Forget up to `CHUNK` of the oldest audit rows past the newest `keep` or older than
    `days`; how many went."""
    before_ms = int((time.time() - days * 86400) * 1000)
    cur = db.execute(
        "DELETE FROM audit WHERE pos IN (SELECT pos FROM audit WHERE pos <="
        " (SELECT max(pos) FROM audit) - ? OR at_ms < ? ORDER BY pos LIMIT ?)",
        (keep, before_ms, CHUNK),
    )
    return cur.rowcount


def truncate_wal(db: sqlite3.Connection) -> bool:
    """Copy the WAL back and cut it to nothing, without waiting for a reader in the way
    (False then: the next idle moment tries again)."""
    waits = int(db.execute("PRAGMA busy_timeout").fetchone()[0])
    db.execute("PRAGMA busy_timeout=0")
    try:
        row = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.OperationalError:
        return False
    finally:
        db.execute(f"PRAGMA busy_timeout={waits}")
    return int(row[0]) == 0


class StoreUpkeep:
    """Mixed into the store actor: counts its applied requests and keeps its bounds."""

    db: sqlite3.Connection
    nursery: trio.Nursery

    def start_upkeep(self) -> None:
        self._writes = 0
        self._upkeep_due = trio.Event()
        self._wrote = trio.Event()
        self.nursery.start_soon(self._prune_when_due)
        self.nursery.start_soon(self._truncate_when_idle)

    def note_write(self) -> None:
        self._writes += 1
        if not self._wrote.is_set():
            self._wrote.set()
        if self._writes % UPKEEP_EVERY == 0:
            self._upkeep_due.set()

    async def _prune_when_due(self) -> None:
        while True:
            await self._upkeep_due.wait()
            self._upkeep_due = trio.Event()
            pruned = 0
            for prune in (prune_requests_chunk, prune_audit_chunk):
                while (count := prune(self.db)) > 0:
                    pruned += count
                    await trio.lowlevel.checkpoint()  # a handler's turn between chunks
            if pruned:
                log.info("%d old request and audit records pruned", pruned)

    async def _truncate_when_idle(self) -> None:
        while True:
            await self._wrote.wait()
            writes = -1
            while writes != self._writes:
                writes = self._writes
                await trio.sleep(IDLE_S)
            self._wrote = trio.Event()
            truncate_wal(self.db)
