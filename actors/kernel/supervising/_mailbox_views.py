"""Reading the mailbox file: the states the debug CLI, the control socket and tests see.

A read-only store uses these on a file another connection writes, so nothing here keeps
state between calls; everything is read from the file, cursors included.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class State(IntEnum):
    PENDING = 0
    INFLIGHT = 1
    DONE = 2
    DEAD = 3


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


# A row's state as the mailbox means it: done once its recipient's cursor passed it.
EFFECTIVE_STATE = (
    "CASE WHEN state IN (0, 1) AND seq <= (SELECT acked FROM cursors c"
    " WHERE c.recipient = messages.recipient) THEN 2 ELSE state END"
)
# A recipient's rows in flight, given (its cursor, the recipient): found from its cursor on.
IN_FLIGHT = "seq > ? AND recipient = ? AND state = 1"
_COLUMNS = (
    f"seq, id, recipient, sender, type, {EFFECTIVE_STATE}, attempts, failures, error,"
    " created_ms, frame"
)


class MailboxViews:
    _db: sqlite3.Connection

    def counts(self, *, inflight: bool = True) -> dict[str, MailboxCounts]:
        """Pending, in-flight and dead messages per recipient. In-flight rows are found
        from each recipient's cursor on, and an idle actor's cursor trails everything
        sent since its last ack: a running supervisor, which knows what is in flight,
        asks without them (`inflight=False`)."""
        totals: dict[str, dict[str, int]] = {}
        for recipient, n in self._db.execute(
            "SELECT recipient, count(*) FROM messages WHERE state = 0 GROUP BY recipient"
        ):
            totals.setdefault(recipient, {})["pending"] = n
        for recipient, n in self._inflight_counts() if inflight else ():
            totals.setdefault(recipient, {})["inflight"] = n
        for recipient, n in self._db.execute(
            "SELECT recipient, count(*) FROM messages WHERE state = 3 GROUP BY recipient"
        ):
            totals.setdefault(recipient, {})["dead"] = n
        return {name: MailboxCounts(**values) for name, values in totals.items()}

    def _inflight_counts(self) -> list[tuple[str, int]]:
        counts = []
        for recipient, acked in self._db.execute("SELECT recipient, acked FROM cursors"):
            (n,) = self._db.execute(
                f"SELECT count(*) FROM messages WHERE {IN_FLIGHT}", (acked, recipient)
            ).fetchone()
            if n:
                counts.append((recipient, n))
        return counts

    def messages(
        self,
        *,
        recipient: str | None = None,
        states: Sequence[State] = (State.PENDING, State.INFLIGHT, State.DEAD),
        limit: int = 100,
    ) -> list[MessageRow]:
        """The oldest `limit` messages in `states` (of `recipient`), in seq order."""
        of = "" if recipient is None else " AND recipient = ?"
        key: tuple[object, ...] = () if recipient is None else (recipient,)
        if State.DONE in states:  # done rows have no index: a scan, for tests and audits
            wanted = ", ".join(str(int(s)) for s in states)
            rows = self._select(f"{EFFECTIVE_STATE} IN ({wanted}){of}", *key, limit=limit)
        else:
            rows = []
            for state in (State.PENDING, State.DEAD):
                if state in states:
                    rows += self._select(f"state = {int(state)}{of}", *key, limit=limit)
            if State.INFLIGHT in states:
                cursors = self._db.execute(f"SELECT recipient, acked FROM cursors WHERE 1{of}", key)
                for name, acked in cursors.fetchall():
                    rows += self._select(IN_FLIGHT, acked, name, limit=limit)
            rows.sort(key=lambda row: row.seq)
        return rows[:limit]

    def message(self, message_id: str, *, sender: str | None = None) -> MessageRow | None:
        """The message with this id (from `sender`: ids are unique per sender only)."""
        if sender is None:
            return self._one("id = ?", message_id)
        return self._one("id = ? AND sender = ?", message_id, sender)

    def message_by_seq(self, seq: int) -> MessageRow | None:
        return self._one("seq = ?", seq)

    def _one(self, where: str, *key: object) -> MessageRow | None:
        rows = self._select(where, *key, limit=1)
        return rows[0] if rows else None

    def _select(self, where: str, *key: object, limit: int) -> list[MessageRow]:
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM messages WHERE {where} ORDER BY seq LIMIT ?", (*key, limit)
        ).fetchall()
        return [_row(r) for r in rows]
