"""Durable mailboxes: every actor's inbox in one SQLite file (WAL), owned by the supervisor.

A message row moves pending -> inflight -> done, or to dead after `max_deliver` failures.
The supervisor commits a message before it is delivered, raises its attempt count in the
same transaction that hands it out, and marks it done only when the recipient acks. This
class is synchronous and knows nothing of processes, so the mailbox protocol can be tested
(and fuzzed) on its own against a real file.

Done is not written into the rows. An actor handles its deliveries in order and acks them
in order, so what it acks is the oldest of its live (pending or inflight) messages: the
ack moves its cursor (`cursors.acked`) past them, one write for a whole batch, and a row at
or below its recipient's cursor is done whatever its `state` column says. An ack that is
not the oldest live messages marks its rows done one by one (`state` 2). Rows
written by an older version (done in the row, no cursors) read the same.

Its tables:

- `messages` (key `seq`, the rowid: mailbox order): `id` (unique per `sender`),
  `recipient`, `sender`, `type`, `frame`, `state` (0 pending, 1 inflight, 2 done out of
  order, 3 dead), `attempts`, `failures`, `error`, `created_ms`, `done_ms`: every actor's
  inbox;
- `cursors` (key `recipient`): `acked`: every row of the recipient at or below it is done;
- `replies` (key `caller`, `request_id`): `frame`: the first reply to each `call`.

`messages` has partial indexes on `(recipient, seq)` of pending and of dead rows; a dead row
says so in its `state` even below its cursor. The first reply to a `call` is re-sent when a
replayed caller asks again.

**Effectively once.** Ids are unique per sender, not across senders: the mailbox inserts
with `ON CONFLICT(sender, id) DO NOTHING`, so a replayed handler's outputs, whose ids are
`derive_id(M.id, n)`, are not stored twice (`derive_id` is public: an app that sent a
message with an id another actor was going to derive would otherwise suppress that actor's
message). A reply names its caller, and the store keys what it applied by sender and id
too.

**What it keeps.** Done rows are kept for a dedup window (`dedup_window_s`, 24 h), at most
those among the newest `dedup_max_rows` seqs (20,000: a size cap that shortens the window,
with a warning at most once an hour), and pruned at start, once a quarter of the cap more
frames came through, and at least every `prune_every_s` (1 h), 2,000 rows a transaction
between batches. Pending, in-flight and dead rows are never pruned. A replayed handler's
copies are what the dedup is for, and a handler is replayed only while its message is
handed out and not acked: the cap never takes a done row younger than such a message
(unless it is `HOLD_LIMIT` caps old), so the cap shortens the window only for a sender
that sends again from its own records, whose recipient keeps applied ids of its own. The
WAL is cut back to 4 MiB each time it starts over, whatever its peak, and to nothing after
30 s without a batch.

Inflight rows are found from the cursor onwards; a running supervisor reports the in-flight
counts it holds in memory instead (an idle actor's cursor trails everything sent since its
last ack, so the scan is for a stopped runtime). A message to an actor with nothing in
flight or pending moves its cursor up to just below it (`settle`), so an ack reads from
there and not through everything the others were sent while it idled. A redriven dead
letter gets a new seq at the end (its old one may be under the cursor), and a new seq is
always above every cursor, also after old rows were pruned. The common ack needs no row at
all (`advance`): when it names the oldest of the seqs the switchboard handed out, in seq
order, with nothing of the actor waiting on disk, every live row of it below the next one
in flight has just been acked, so the cursor moves there. Rewriting every acked row, with
an inflight index, cost about 30 % of the supervisor's CPU per message.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from contracts import fsync_directory

from .._durability import Synchronous, is_disk_full_error
from ._mailbox_views import (
    EFFECTIVE_STATE,
    IN_FLIGHT,
    MailboxCounts,
    MailboxViews,
    MessageRow,
    State,
)

__all__ = ["MailboxCounts", "MailboxStore", "MessageRow", "PruneStep", "State"]

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
-- Partial indexes: a row is in them only while it waits or is dead, so done rows (kept
-- for dedup) cost nothing. SQLite uses a partial index only when the query repeats its
-- WHERE term exactly.
-- Ids are unique per sender, not across senders: an id is what its sender's replayed
-- handler re-emits, and no other actor (an app least of all) can claim it first.
CREATE UNIQUE INDEX IF NOT EXISTS messages_sender_id ON messages(sender, id);
CREATE INDEX IF NOT EXISTS messages_pending ON messages(recipient, seq) WHERE state = 0;
CREATE INDEX IF NOT EXISTS messages_dead ON messages(recipient, seq) WHERE state = 3;
-- Inflight rows stay inflight in the row once their cursor has passed them: an index of
-- them would only grow. Inflight rows are found from the cursor onwards instead.
DROP INDEX IF EXISTS messages_inflight;
-- Every row of `recipient` with seq <= acked is done or dead (see the module's docstring).
CREATE TABLE IF NOT EXISTS cursors (
    recipient TEXT PRIMARY KEY,
    acked INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS replies (
    caller TEXT NOT NULL,
    request_id TEXT NOT NULL,
    frame BLOB NOT NULL,
    PRIMARY KEY (caller, request_id)
) WITHOUT ROWID;
"""


_UPSERT_CURSOR = (
    "INSERT INTO cursors (recipient, acked) VALUES (?, ?)"
    " ON CONFLICT(recipient) DO UPDATE SET acked = excluded.acked"
)


def _create_schema(db: sqlite3.Connection) -> None:
    db.executescript(_SCHEMA)


# How far back one message handed out and not acked may hold the size cap, in caps: far
# enough for any replay, and a stuck message does not keep the mailbox growing for good.
HOLD_LIMIT = 4


@dataclass(frozen=True)
class Delivery:
    seq: int
    frame: bytes  # as its sender packed it, without `from`
    sender: str
    attempts: int


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# Below this much free space the data dir's disk counts as full: the supervisor holds its
# commits until there is room again rather than fail one halfway, and the runtime reports
# itself degraded meanwhile. Each commit is small; the margin covers the ones in between.
DISK_RESERVE_BYTES = 8 << 20
DISK_FULL_REASON = (
    "the data dir's disk is full: free some space on it; the runtime goes on by itself"
    " once there is room, and keeps every message it has accepted"
)
WAL_KEPT_BYTES = 4 << 20
# Rows a prune looks at in one transaction: a few ms, between two batches of messages.
PRUNE_CHUNK = 2000


class PruneStep(NamedTuple):
    pruned: int
    after: int | None  # the seq to go on after, or None when no prunable row is left
    newest_forced_ms: int | None  # when the youngest row the size cap took was done


def disk_free(path: str | Path) -> int:
    """Bytes an unprivileged writer may still use on the file system holding `path`."""
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def disk_full(path: str | Path) -> bool:
    return disk_free(path) < DISK_RESERVE_BYTES


class MailboxStore(MailboxViews):
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
        self.synchronous = synchronous
        self._wal_named = False  # the WAL's name is durable (its directory fsynced)
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
            # A burst (or a full disk, when nothing is copied back) grows the WAL; once it
            # starts over, SQLite cuts the file back to this instead of keeping its peak.
            self._db.execute(f"PRAGMA journal_size_limit={WAL_KEPT_BYTES}")
            _create_schema(self._db)
        self._in_txn = False
        # The writer's view of its own file, kept in memory (never by a read-only store,
        # whose file another connection changes): each recipient's cursor and the last
        # seq handed out. A rollback forgets both; they are read again.
        self._cursors: dict[str, int] = {}
        self._last_seq: int | None = None
        # Acks not written yet: a transaction of acks alone (`begin(acks_only=True)`) moves
        # cursors in memory, and the next one that writes anything writes them first.
        self._due: dict[str, int] = {}  # recipient -> its cursor
        self._writing_due: dict[str, int] = {}  # written in the open transaction
        self._acks_only = False

    # -- transactions ------------------------------------------------------------------

    def begin(self, *, acks_only: bool = False) -> None:
        """Open a transaction. With `acks_only`, the acks in it (`advance`) move cursors in
        memory only, and it writes nothing unless something else is done in it: losing an
        ack to a crash only hands its message out again, which its recipient applies once
        (as after its own crash before it acked)."""
        if self._in_txn:
            raise RuntimeError("a transaction is already open")
        self._db.execute("BEGIN IMMEDIATE")
        self._in_txn = True
        self._acks_only = acks_only
        if not acks_only:
            self._write_due()

    def commit(self) -> bool:
        """Commit; whether the transaction wrote anything (a transaction of acks alone
        leaves them held: `acks_held`)."""
        self._db.execute("COMMIT")
        self._in_txn = False
        self._writing_due.clear()
        wrote, self._acks_only = not self._acks_only, False
        return wrote

    def rollback(self) -> None:
        if self._in_txn:
            self._db.execute("ROLLBACK")
            self._in_txn = False
            self._cursors.clear()
            self._last_seq = None
            self._due = {**self._writing_due, **self._due}
            self._writing_due.clear()
            self._acks_only = False

    @property
    def acks_held(self) -> bool:
        """Whether acks are held in memory, for the next transaction that writes."""
        return bool(self._due)

    def _write_due(self) -> None:
        """Before anything else is written or read in this transaction: the acks held."""
        self._acks_only = False
        if self._due:
            self._db.executemany(_UPSERT_CURSOR, list(self._due.items()))
            self._writing_due.update(self._due)
            self._due.clear()

    def close(self) -> None:
        self.rollback()
        if self._due and not self.readonly:
            self.begin()
            self.commit()
        self._db.close()

    def wal_pages(self) -> int:
        """The WAL's size now, in pages (0 when there is none)."""
        try:
            size = os.stat(f"{self.path}-wal").st_size
        except FileNotFoundError:
            return 0
        return size // int(self._db.execute("PRAGMA page_size").fetchone()[0])

    def sync_wal(self) -> None:
        """Make every transaction committed so far durable, as each commit at FULL would
        have: an fsync of the WAL, which SQLite at NORMAL syncs only when it checkpoints
        (and once of the directory, which holds the WAL's name). One of them covers every
        commit since the last."""
        fd = os.open(f"{self.path}-wal", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if not self._wal_named:
            fsync_directory(self.path.parent)
            self._wal_named = True

    def checkpoint(self) -> tuple[int, int]:
        """Copy the WAL back into the database without blocking the writer (PASSIVE): from
        a worker thread on a store of its own, or on the writer's store between two
        transactions. Returns (WAL pages, pages checkpointed): (0, 0) when the disk is too
        full to copy anything back (the WAL keeps every commit; the next one tries again)."""
        try:
            row = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.OperationalError as exc:
            if is_disk_full_error(exc):
                return 0, 0
            raise
        return int(row[1]), int(row[2])

    # -- cursors and seqs (the writer's) -----------------------------------------------

    def _cursor(self, recipient: str) -> int | None:
        acked = self._cursors.get(recipient)
        if acked is None:
            acked = self._due.get(recipient)
        if acked is None:
            row = self._db.execute(
                "SELECT acked FROM cursors WHERE recipient = ?", (recipient,)
            ).fetchone()
            if row is None:
                return None
            acked = self._cursors[recipient] = int(row[0])
        return acked

    def _move_cursor(self, recipient: str, acked: int) -> None:
        self._db.execute(_UPSERT_CURSOR, (recipient, acked))
        self._cursors[recipient] = acked

    def _next_seq(self) -> int:
        """The next seq to use. Above every cursor as well as every row: a seq reused
        after old rows were pruned would be born done."""
        if self._last_seq is None:
            row = self._db.execute(
                "SELECT max(coalesce((SELECT max(seq) FROM messages), 0),"
                " coalesce((SELECT max(acked) FROM cursors), 0))"
            ).fetchone()
            self._last_seq = int(row[0])
        return self._last_seq + 1

    def _stored(self, recipients: Iterable[str], first: int, last: int) -> None:
        """Seqs `first`..`last` were inserted, for `recipients`: seqs are used; a first
        message gives its recipient a cursor below it (below `first` is below it)."""
        self._last_seq = last
        for recipient in recipients:
            if recipient not in self._cursors and self._cursor(recipient) is None:
                self._move_cursor(recipient, first - 1)

    # -- the mailbox protocol (call inside begin/commit) -------------------------------

    def recover(self) -> int:
        """After a supervisor restart nothing is in flight: hand every inflight row back."""
        self._write_due()
        cur = self._db.execute(
            "UPDATE messages SET state = 0 WHERE state = 1 AND seq > coalesce((SELECT acked"
            " FROM cursors c WHERE c.recipient = messages.recipient), 0)"
        )
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
        seqs = self.insert_many([(message_id, recipient, sender, type, frame, inflight)])
        return None if seqs is None else seqs[0]

    def insert_many(self, rows: list[tuple[str, str, str, str, bytes, bool]]) -> list[int] | None:
        """Store (id, recipient, sender, type, frame, inflight) rows in one statement; their
        seqs in order, or None (and nothing stored) if any id was seen before, so that the
        caller can fall back to `insert` one by one and learn which."""
        self._write_due()
        if not rows:
            return []
        first = self._next_seq()
        now = _now_ms()
        single = len(rows) == 1
        if not single:
            self._db.execute("SAVEPOINT insert_many")
        before = self._db.total_changes
        self._db.executemany(
            "INSERT INTO messages (seq, id, recipient, sender, type, frame, state, attempts,"
            " created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(sender, id) DO NOTHING",
            [
                # state and attempts: 1 if handed out at once. As ints: sqlite3 binds an
                # int directly and a bool through its adapter lookup (0.3 us each).
                (first + i, mid, to, sender, type, frame, int(inflight), int(inflight), now)
                for i, (mid, to, sender, type, frame, inflight) in enumerate(rows)
            ],
        )
        stored = self._db.total_changes - before == len(rows)
        if not single:
            if not stored:
                self._db.execute("ROLLBACK TO insert_many")
            self._db.execute("RELEASE insert_many")
        if not stored:
            return None
        last = first + len(rows) - 1
        self._stored({row[1] for row in rows}, first, last)
        return list(range(first, last + 1))

    def take(self, recipient: str, limit: int) -> list[Delivery]:
        """The oldest `limit` pending messages of `recipient`, now inflight, attempts raised."""
        self._write_due()
        if limit <= 0:
            return []
        # One statement picks, marks and returns the rows (RETURNING order is unspecified,
        # hence the sort): half the work of a SELECT followed by per-row UPDATEs.
        rows = self._db.execute(
            "UPDATE messages SET state = 1, attempts = attempts + 1 WHERE seq IN"
            " (SELECT seq FROM messages WHERE recipient = ? AND state = 0 ORDER BY seq LIMIT ?)"
            " RETURNING seq, frame, sender, attempts",
            (recipient, limit),
        ).fetchall()
        rows.sort()
        return [Delivery(*row) for row in rows]

    def ack(self, recipient: str, seqs: Iterable[int]) -> int:
        """Mark delivered messages done; how many were. Only `recipient`'s own inflight
        rows can be acked.

        The common ack is the oldest of the recipient's live messages: its cursor moves to
        just below the next live one (or to the last seq, if none is left), and no message
        row is written. Any other ack marks its rows done one by one.
        """
        self._write_due()
        wanted = sorted(set(seqs))
        if not wanted:
            return 0
        cursor = self._cursor(recipient) or 0
        live = self._db.execute(
            "SELECT seq, state FROM messages WHERE seq > ? AND recipient = ?"
            " AND state IN (0, 1) ORDER BY seq LIMIT ?",
            (cursor, recipient, len(wanted) + 1),
        ).fetchall()
        oldest = live[: len(wanted)]
        if [seq for seq, _ in oldest] == wanted and all(state == 1 for _, state in oldest):
            after = live[len(wanted)][0] - 1 if len(live) > len(wanted) else self._last_row()
            self._move_cursor(recipient, after)
            return len(wanted)
        now = _now_ms()
        runs: list[tuple[int, int, str, int, int]] = []  # runs of consecutive seqs
        for seq in wanted:
            if runs and runs[-1][1] == seq - 1:
                runs[-1] = (now, seq, recipient, runs[-1][3], cursor)
            else:
                runs.append((now, seq, recipient, seq, cursor))
        cur = self._db.executemany(
            "UPDATE messages SET state = 2, done_ms = ? WHERE seq BETWEEN ?4 AND ?2"
            " AND recipient = ?3 AND state = 1 AND seq > ?5",
            runs,
        )
        return cur.rowcount

    def advance(self, recipient: str, acked: int) -> None:
        """Move `recipient`'s cursor up to `acked`, for a caller that knows that every live
        message of `recipient` at or below it has just been acked (`ack` finds that out
        from the rows)."""
        if acked > (self._cursor(recipient) or 0):
            if self._acks_only:
                self._cursors[recipient] = self._due[recipient] = acked
            else:
                self._move_cursor(recipient, acked)

    def settle(self, recipient: str, seq: int) -> None:
        """`recipient` had nothing in flight when its message `seq` came: move its cursor up
        to just below it, so that acks look for its live rows from there and not from its
        previous ack, which trails everything the others were sent meanwhile (an actor
        that idles through a burst would make its next ack scan the whole burst).

        The caller knows what is in flight; pending rows are checked here (their index
        makes it one lookup), and one below `seq` leaves the cursor where it is.
        """
        self._write_due()
        cursor = self._cursor(recipient)
        if cursor is None or cursor >= seq - 1:
            return
        pending = self._db.execute(
            "SELECT 1 FROM messages WHERE recipient = ? AND state = 0 AND seq < ? LIMIT 1",
            (recipient, seq),
        ).fetchone()
        if pending is None:
            self._move_cursor(recipient, seq - 1)

    def _last_row(self) -> int:
        row = self._db.execute("SELECT max(seq) FROM messages").fetchone()
        return int(row[0] or 0)

    def requeue(self, recipient: str) -> int:
        """Hand every inflight message of `recipient` back to pending (it restarted)."""
        self._write_due()
        cur = self._db.execute(
            f"UPDATE messages SET state = 0 WHERE {IN_FLIGHT}",
            (self._cursor(recipient) or 0, recipient),
        )
        return cur.rowcount

    def fail(self, seq: int, error: str, *, max_deliver: int) -> bool:
        """Count one failure against an inflight message; True if it is now dead."""
        self._write_due()
        if max_deliver <= 0:
            raise ValueError("`max_deliver` must be positive")
        self._db.execute(
            "UPDATE messages SET failures = failures + 1, error = ?,"
            " state = CASE WHEN failures + 1 >= ? THEN 3 ELSE 0 END"
            " WHERE seq = ? AND state = 1 AND seq > coalesce((SELECT acked FROM cursors c"
            " WHERE c.recipient = messages.recipient), 0)",
            (error, max_deliver, seq),
        )
        row = self._db.execute("SELECT state FROM messages WHERE seq = ?", (seq,)).fetchone()
        return row is not None and row[0] == State.DEAD

    def redrive(self, message_id: str) -> str | None:
        """Move a dead message back to pending with its failures cleared; its recipient.

        It goes to the end of its recipient's mailbox under a new seq: its old one may
        already be below the recipient's cursor, where it would count as done.
        """
        self._write_due()
        row = self._db.execute(
            "SELECT seq, recipient FROM messages WHERE id = ? AND state = 3", (message_id,)
        ).fetchone()
        if row is None:
            return None
        seq, recipient = int(row[0]), str(row[1])
        new_seq = self._next_seq()
        # Delete before insert: (sender, id) is unique.
        moved = self._db.execute(
            "DELETE FROM messages WHERE seq = ? RETURNING id, recipient, sender, type, frame,"
            " attempts, created_ms",
            (seq,),
        ).fetchone()
        self._db.execute(
            "INSERT INTO messages (seq, id, recipient, sender, type, frame, state, attempts,"
            " created_ms) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
            (new_seq, *moved),
        )
        self._stored((recipient,), new_seq, new_seq)
        return recipient

    def store_reply(self, request_id: str, caller: str, frame: bytes) -> bool:
        self._write_due()
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

    def prune(
        self,
        *,
        done_before_ms: int,
        after_seq: int = 0,
        limit: int = PRUNE_CHUNK,
        keep_from_seq: int = 0,
        held_from_seq: int | None = None,
    ) -> PruneStep:
        """Forget done messages (and their stored replies) older than the dedup window, and
        with `keep_from_seq` also the younger ones below that seq (the size cap), up to
        `limit` rows past `after_seq` at a time, oldest first, so that no transaction holds
        the mailbox long. Pending, in-flight and dead rows are never forgotten. Seqs grow
        with time: rows are looked at until one is both too young and inside the cap.

        A message handed out and not acked (in flight, or handed back with attempts) may
        be handled again, and what its handler sent is sent again under the same ids: the
        cap keeps every done row from the oldest such message on, so that those copies are
        still dropped, unless that message is older than `held_from_seq` (a bound on how
        far back one stuck message holds the cap: None, no bound)."""
        self._write_due()
        rows = self._db.execute(
            "SELECT seq, sender, id, coalesce(done_ms, created_ms), created_ms,"
            f" {EFFECTIVE_STATE}, attempts"
            " FROM messages WHERE seq > ? ORDER BY seq LIMIT ?",
            (after_seq, limit),
        ).fetchall()
        old: list[tuple[int, str, str]] = []
        newest_forced = None  # the youngest row the cap took inside the window
        for seq, sender, message_id, done_ms, _, state, attempts in rows:
            handed_out = state == State.INFLIGHT or (state == State.PENDING and attempts > 0)
            if handed_out and seq >= (held_from_seq if held_from_seq is not None else seq):
                keep_from_seq = min(keep_from_seq, seq)
            if state != State.DONE or (done_ms >= done_before_ms and seq >= keep_from_seq):
                continue
            old.append((seq, sender, message_id))
            if done_ms >= done_before_ms:
                newest_forced = max(newest_forced or 0, int(done_ms))
        self._db.executemany(
            "DELETE FROM replies WHERE caller = ? AND request_id = ?",
            [(sender, message_id) for _, sender, message_id in old],
        )
        self._db.executemany("DELETE FROM messages WHERE seq = ?", [(seq,) for seq, _, _ in old])
        last_seq, last_ms = (int(rows[-1][0]), int(rows[-1][4])) if rows else (0, 0)
        if len(rows) < limit or (last_ms >= done_before_ms and last_seq >= keep_from_seq):
            return PruneStep(len(old), None, newest_forced)
        return PruneStep(len(old), last_seq, newest_forced)

    def cap_seq(self, max_done: int) -> int:
        """The seq below which done rows go whatever their age: the newest `max_done`
        seqs are kept (a seq range, read in one lookup, not a count of rows)."""
        return max(0, (self._last_seq or self._next_seq() - 1) - max_done + 1)

    def cap_bounds(self, max_done: int) -> dict[str, int]:
        """`prune`'s size cap for `max_done`: the newest `max_done` seqs, and a message
        handed out and not acked holds it back at most `HOLD_LIMIT` times as far."""
        return {
            "keep_from_seq": self.cap_seq(max_done),
            "held_from_seq": self.cap_seq(HOLD_LIMIT * max_done),
        }

    def prune_all(
        self, *, done_before_ms: int, keep_from_seq: int = 0, held_from_seq: int | None = None
    ) -> PruneStep:
        """Every done message older than the dedup window or below the cap, chunk after
        chunk."""
        pruned, after, newest_forced = 0, 0, None
        while True:
            step = self.prune(
                done_before_ms=done_before_ms,
                after_seq=after,
                keep_from_seq=keep_from_seq,
                held_from_seq=held_from_seq,
            )
            pruned += step.pruned
            if step.newest_forced_ms is not None:
                newest_forced = max(newest_forced or 0, step.newest_forced_ms)
            if step.after is None:
                return PruneStep(pruned, None, newest_forced)
            after = step.after

    def truncate_wal(self) -> bool:
        """Copy the whole WAL back and cut it to nothing (an idle moment's checkpoint);
        False when a reader or writer was in the way (the next idle moment tries again):
        it never waits for them, so the caller's loop is never held."""
        waits = int(self._db.execute("PRAGMA busy_timeout").fetchone()[0])
        self._db.execute("PRAGMA busy_timeout=0")
        try:
            row = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.OperationalError as exc:
            if is_disk_full_error(exc):
                return False
            raise
        finally:
            self._db.execute(f"PRAGMA busy_timeout={waits}")
        return int(row[0]) == 0
