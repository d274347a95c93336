"""Durable mailboxes: every actor's inbox in one SQLite file (WAL), owned by the supervisor.

A message row moves pending -> inflight -> done, or to dead after `max_deliver` failures.
The supervisor commits a message before it is delivered, raises its attempt count in the
same transaction that hands it out, and marks it done only when the recipient acks. This
class is synchronous and knows nothing of processes, so the mailbox protocol can be tested
(and fuzzed) on its own against a real file.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any, Literal

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    recipient TEXT NOT NULL,
    sender TEXT NOT NULL,
    type TEXT NOT NULL,
    frame BLOB NOT NULL,
    state INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created_ms INTEGER NOT NULL,
    done_ms INTEGER
);
-- Partial indexes: a row is in them only while it waits or is in flight, so done rows (kept
-- for dedup) cost nothing. SQLite uses a partial index only when the query repeats its
-- WHERE term exactly.
-- Ids are unique per sender, not across senders: an id is what its sender's replayed
-- handler re-emits, and no other actor (an app least of all) can claim it first.
CREATE UNIQUE INDEX IF NOT EXISTS messages_sender_id ON messages(sender, id);
CREATE INDEX IF NOT EXISTS messages_pending ON messages(recipient, seq) WHERE state = 0;
CREATE INDEX IF NOT EXISTS messages_inflight ON messages(recipient, seq) WHERE state = 1;
CREATE INDEX IF NOT EXISTS messages_dead ON messages(recipient, seq) WHERE state = 3;
CREATE TABLE IF NOT EXISTS replies (
    caller TEXT NOT NULL,
    request_id TEXT NOT NULL,
    frame BLOB NOT NULL,
    PRIMARY KEY (caller, request_id)
) WITHOUT ROWID;
"""

# A mailbox.db from before ids were unique per sender: rebuilt once, rows kept.
_MIGRATE = """
ALTER TABLE messages RENAME TO messages_v1;
ALTER TABLE replies RENAME TO replies_v1;
DROP INDEX IF EXISTS messages_pending;
DROP INDEX IF EXISTS messages_inflight;
DROP INDEX IF EXISTS messages_dead;
{schema}
INSERT INTO messages SELECT * FROM messages_v1;
INSERT INTO replies (caller, request_id, frame) SELECT caller, request_id, frame FROM replies_v1;
DROP TABLE messages_v1;
DROP TABLE replies_v1;
"""


def _create_schema(db: sqlite3.Connection) -> None:
    row = db.execute("SELECT sql FROM sqlite_master WHERE name = 'messages'").fetchone()
    if row is not None and "id TEXT NOT NULL UNIQUE" in row[0]:
        db.executescript("BEGIN IMMEDIATE;" + _MIGRATE.format(schema=_SCHEMA) + "COMMIT;")
    else:
        db.executescript(_SCHEMA)


class State(IntEnum):
    PENDING = 0
    INFLIGHT = 1
    DONE = 2
    DEAD = 3


@dataclass(frozen=True)
class Delivery:
    seq: int
    frame: bytes
    attempts: int


@dataclass(frozen=True)
class MessageRow:
    seq: int
    id: str
    recipient: str
    sender: str
    type: str
    state: State
    attempts: int
    failures: int
    error: str | None
    created_ms: int
    frame: bytes


@dataclass(frozen=True)
class MailboxCounts:
    pending: int = 0
    inflight: int = 0
    dead: int = 0


def _row(r: tuple[Any, ...]) -> MessageRow:
    return MessageRow(
        r[0], r[1], r[2], r[3], r[4], State(r[5]), r[6], r[7], r[8], r[9], bytes(r[10])
    )


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MailboxStore:
    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Synchronous = "FULL",
        readonly: bool = False,
    ) -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"unknown synchronous level {synchronous!r}")
        self.path = Path(path)
        self.readonly = readonly
        if readonly:
            uri = f"file:{self.path}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None)
        else:
            # Not bound to one thread: the checkpointer's store is used from a worker thread
            # (one call at a time).
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            # Checkpoints run on another connection, off the commit path (`checkpoint`):
            # inline they put a WAL copy inside some commits, which is what p99 sees.
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            _create_schema(self._db)
        self._in_txn = False

    # -- transactions ------------------------------------------------------------------

    def begin(self) -> None:
        if self._in_txn:
            raise RuntimeError("a transaction is already open")
        self._db.execute("BEGIN IMMEDIATE")
        self._in_txn = True

    def commit(self) -> None:
        self._db.execute("COMMIT")
        self._in_txn = False

    def rollback(self) -> None:
        if self._in_txn:
            self._db.execute("ROLLBACK")
            self._in_txn = False

    def close(self) -> None:
        self.rollback()
        self._db.close()

    def checkpoint(self) -> tuple[int, int]:
        """Copy the WAL back into the database without blocking the writer; call it from a
        worker thread on a store of its own. Returns (WAL pages, pages checkpointed)."""
        row = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(row[1]), int(row[2])

    # -- the mailbox protocol (call inside begin/commit) -------------------------------

    def recover(self) -> int:
        """After a supervisor restart nothing is in flight: hand every inflight row back."""
        cur = self._db.execute("UPDATE messages SET state = 0 WHERE state = 1")
        return cur.rowcount

    def insert(
        self,
        *,
        message_id: str,
        recipient: str,
        sender: str,
        type: str,
        frame: bytes,
        inflight: bool,
    ) -> int | None:
        """Store a message; returns its seq, or None if its sender used its id before.

        `inflight=True` stores it as already handed out (attempt 1), for the common case of
        a recipient with free credits and no backlog: one write instead of two.
        """
        cur = self._db.execute(
            "INSERT INTO messages (id, recipient, sender, type, frame, state, attempts,"
            " created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(sender, id) DO NOTHING",
            (
                message_id,
                recipient,
                sender,
                type,
                frame,
                State.INFLIGHT if inflight else State.PENDING,
                1 if inflight else 0,
                _now_ms(),
            ),
        )
        return cur.lastrowid if cur.rowcount == 1 else None

    def insert_many(self, rows: list[tuple[str, str, str, str, bytes, bool]]) -> list[int] | None:
        """Store (id, recipient, sender, type, frame, inflight) rows in one statement; their
        seqs in order, or None (and nothing stored) if any id was seen before, so that the
        caller can fall back to `insert` one by one and learn which."""
        if not rows:
            return []
        first = self._next_seq()
        now = _now_ms()
        self._db.execute("SAVEPOINT insert_many")
        before = self._db.total_changes
        self._db.executemany(
            "INSERT INTO messages (seq, id, recipient, sender, type, frame, state, attempts,"
            " created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(sender, id) DO NOTHING",
            [
                (first + i, mid, to, sender, type, frame, int(inflight), int(inflight), now)
                for i, (mid, to, sender, type, frame, inflight) in enumerate(rows)
            ],
        )
        if self._db.total_changes - before == len(rows):
            self._db.execute("RELEASE insert_many")
            return list(range(first, first + len(rows)))
        self._db.execute("ROLLBACK TO insert_many")
        self._db.execute("RELEASE insert_many")
        return None

    def _next_seq(self) -> int:
        row = self._db.execute("SELECT max(seq) FROM messages").fetchone()
        return int(row[0] or 0) + 1

    def take(self, recipient: str, limit: int) -> list[Delivery]:
        """The oldest `limit` pending messages of `recipient`, now inflight, attempts raised."""
        if limit <= 0:
            return []
        # One statement picks, marks and returns the rows (RETURNING order is unspecified,
        # hence the sort): half the work of a SELECT followed by per-row UPDATEs.
        rows = self._db.execute(
            "UPDATE messages SET state = 1, attempts = attempts + 1 WHERE seq IN"
            " (SELECT seq FROM messages WHERE recipient = ? AND state = 0 ORDER BY seq LIMIT ?)"
            " RETURNING seq, frame, attempts",
            (recipient, limit),
        ).fetchall()
        rows.sort()
        return [Delivery(seq, frame, attempts) for seq, frame, attempts in rows]

    def ack(self, recipient: str, seqs: Iterable[int]) -> int:
        """Mark delivered messages done. Only `recipient`'s own inflight rows can be acked.

        Acks come in runs of consecutive seqs (a burst to one actor): each run is one
        range statement, not a statement per seq (≈1/3 of an ack's cost). A range holds
        exactly the run's seqs, so nothing outside the list is touched.
        """
        now = _now_ms()
        runs: list[tuple[int, int, str, int]] = []
        for seq in sorted(set(seqs)):
            if runs and runs[-1][1] == seq - 1:
                runs[-1] = (now, seq, recipient, runs[-1][3])
            else:
                runs.append((now, seq, recipient, seq))
        cur = self._db.executemany(
            "UPDATE messages SET state = 2, done_ms = ? WHERE seq BETWEEN ?4 AND ?2"
            " AND recipient = ?3 AND state = 1",
            runs,
        )
        return cur.rowcount

    def requeue(self, recipient: str) -> int:
        """Hand every inflight message of `recipient` back to pending (it restarted)."""
        cur = self._db.execute(
            "UPDATE messages SET state = 0 WHERE recipient = ? AND state = 1", (recipient,)
        )
        return cur.rowcount

    def fail(self, seq: int, error: str, *, max_deliver: int) -> bool:
        """Count one failure against an inflight message; True if it is now dead."""
        if max_deliver <= 0:
            raise ValueError("`max_deliver` must be positive")
        self._db.execute(
            "UPDATE messages SET failures = failures + 1, error = ?,"
            " state = CASE WHEN failures + 1 >= ? THEN 3 ELSE 0 END"
            " WHERE seq = ? AND state = 1",
            (error, max_deliver, seq),
        )
        row = self._db.execute("SELECT state FROM messages WHERE seq = ?", (seq,)).fetchone()
        return row is not None and row[0] == State.DEAD

    def redrive(self, message_id: str) -> str | None:
        """Move a dead message back to pending with its failures cleared; its recipient."""
        row = self._db.execute(
            "SELECT recipient FROM messages WHERE id = ? AND state = 3", (message_id,)
        ).fetchone()
        if row is None:
            return None
        self._db.execute(
            "UPDATE messages SET state = 0, failures = 0, error = NULL WHERE id = ?",
            (message_id,),
        )
        return str(row[0])

    def store_reply(self, request_id: str, caller: str, frame: bytes) -> bool:
        cur = self._db.execute(
            "INSERT INTO replies (caller, request_id, frame) VALUES (?, ?, ?)"
            " ON CONFLICT(caller, request_id) DO NOTHING",
            (caller, request_id, frame),
        )
        return cur.rowcount == 1

    def reply_for(self, request_id: str, caller: str) -> bytes | None:
        row = self._db.execute(
            "SELECT frame FROM replies WHERE caller = ? AND request_id = ?", (caller, request_id)
        ).fetchone()
        return None if row is None else bytes(row[0])

    def prune(self, *, done_before_ms: int) -> int:
        """Forget done messages older than the dedup window (and their stored replies)."""
        self._db.execute(
            "DELETE FROM replies WHERE (caller, request_id) IN (SELECT sender, id FROM messages"
            " WHERE state = 2 AND done_ms < ?)",
            (done_before_ms,),
        )
        cur = self._db.execute(
            "DELETE FROM messages WHERE state = 2 AND done_ms < ?", (done_before_ms,)
        )
        return cur.rowcount

    # -- inspection (any time, also read-only) -----------------------------------------

    def counts(self) -> dict[str, MailboxCounts]:
        totals: dict[str, dict[str, int]] = {}
        for recipient, state, n in self._db.execute(
            "SELECT recipient, 0, count(*) FROM messages WHERE state = 0 GROUP BY recipient"
            " UNION ALL SELECT recipient, 1, count(*) FROM messages WHERE state = 1"
            " GROUP BY recipient"
        ):
            totals.setdefault(recipient, {})[State(state).name.lower()] = n
        for recipient, n in self._db.execute(
            "SELECT recipient, count(*) FROM messages WHERE state = 3 GROUP BY recipient"
        ):
            totals.setdefault(recipient, {})["dead"] = n
        return {name: MailboxCounts(**values) for name, values in totals.items()}

    def messages(
        self,
        *,
        recipient: str | None = None,
        states: Sequence[State] = (State.PENDING, State.INFLIGHT, State.DEAD),
        limit: int = 100,
    ) -> list[MessageRow]:
        where = [f"state IN ({', '.join(str(int(s)) for s in states)})"]
        params: list[object] = []
        if recipient is not None:
            where.append("recipient = ?")
            params.append(recipient)
        params.append(limit)
        rows = self._db.execute(
            "SELECT seq, id, recipient, sender, type, state, attempts, failures, error,"
            f" created_ms, frame FROM messages WHERE {' AND '.join(where)}"
            " ORDER BY seq LIMIT ?",
            params,
        ).fetchall()
        return [_row(r) for r in rows]

    def message(self, message_id: str, *, sender: str | None = None) -> MessageRow | None:
        """The message with this id (from `sender`: ids are unique per sender only)."""
        if sender is None:
            return self._one("id = ?", message_id)
        return self._one("id = ? AND sender = ?", message_id, sender)

    def message_by_seq(self, seq: int) -> MessageRow | None:
        return self._one("seq = ?", seq)

    def _one(self, where: str, *key: object) -> MessageRow | None:
        row = self._db.execute(
            "SELECT seq, id, recipient, sender, type, state, attempts, failures, error,"
            f" created_ms, frame FROM messages WHERE {where}",
            key,
        ).fetchone()
        if row is None:
            return None
        return _row(row)
