"""The tool router's rows in `runtime.db`: tool calls, their deadline operations, published
inventories, the revision.

The tool router owns every decision; the store keeps what it is told, one step in one
transaction (`store.tools.write`) together with the outbox items and audit rows of that
step, applied once by the request's id. So "the call is accepted" and the `accepted`
receipt for the agent are on disk together or not at all, and a call's one final outcome
and its envelope are one commit.

A call is inserted only if its `call_id` is new (`accept`): the answer names the calls that
were known already, with their rows, so a retried or redelivered call is never taken twice.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

from actors.kernel import Actor, Message, handles

from ._rows import RowCodec

CALL_COLUMNS: Final = (
    "call_id",
    "envelope_id",
    "conversation_id",
    "agent_id",
    "app_scope",
    "method",
    "contract_version",
    "arguments",
    "revision",
    "instance_id",
    "state",
    "code",
    "detail",
    "output",
    "history",
    "created_ms",
    "updated_ms",
    "deadline_ms",
)
INVENTORY_COLUMNS: Final = (
    "conversation_id",
    "agent_id",
    "revision",
    "hash",
    "payload",
    "visibility",
    "published_ms",
)
DEADLINE_COLUMNS: Final = (
    "call_id",
    "operation_id",
    "app_scope",
    "conversation_id",
    "instance_id",
    "duration_ms",
    "display",
    "state",
    "requested_ms",
    "started_ms",
    "ends_ms",
    "ended_ms",
    "noticed_ms",
    "ended_by",
    "remaining_ms",
    "pauses",
)
_CODEC: Final = RowCodec(
    frozenset({"arguments", "output", "history", "payload", "visibility", "display"})
)
RECENT_DEADLINES: Final = 10  # what an app is told about its deadline operations
# Operations ended this recently are told to their app again when the tool router starts:
# well within the mailbox's dedup window, so what was told already is kept once.
RETELL_MS: Final = 3_600_000
FINAL_STATES: Final = ("succeeded", "failed")


def rows_of(columns: tuple[str, ...], cursor: Iterable[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Rows as maps, their JSON columns decoded."""
    return _CODEC.rows(columns, cursor)


def call_row(db: sqlite3.Connection, call_id: str) -> dict[str, Any] | None:
    rows = rows_of(
        CALL_COLUMNS,
        db.execute(
            f"SELECT {', '.join(CALL_COLUMNS)} FROM tool_calls WHERE call_id = ?", (call_id,)
        ),
    )
    return rows[0] if rows else None


def load_tools(db: sqlite3.Connection, now_ms: int) -> dict[str, Any]:
    """What the tool router rebuilds its state from: the calls without a final outcome,
    the deadline operations of those and those ended within `RETELL_MS` (their apps are
    told again), every published inventory, the highest revision ever issued."""
    open_calls = db.execute(
        f"SELECT {', '.join(CALL_COLUMNS)} FROM tool_calls"
        f" WHERE state NOT IN {FINAL_STATES} ORDER BY created_ms, rowid"
    )
    inventories = db.execute(f"SELECT {', '.join(INVENTORY_COLUMNS)} FROM tool_inventories")
    revision = db.execute("SELECT value FROM tool_state WHERE name = 'revision'").fetchone()
    deadlines = db.execute(
        f"SELECT {', '.join('d.' + c for c in DEADLINE_COLUMNS)} FROM tool_deadlines d"
        f" JOIN tool_calls c USING (call_id) WHERE c.state NOT IN {FINAL_STATES}"
        " OR d.noticed_ms >= ? ORDER BY d.requested_ms, d.rowid",
        (now_ms - RETELL_MS,),
    )
    return {
        "calls": rows_of(CALL_COLUMNS, open_calls),
        "deadlines": rows_of(DEADLINE_COLUMNS, deadlines),
        "inventories": rows_of(INVENTORY_COLUMNS, inventories),
        "revision": int(revision[0]) if revision else 0,
    }


class ToolTables(Actor):
    """The store's handlers for the tool router (mixed into `StoreActor`)."""

    db: sqlite3.Connection
    _once: Callable[[Message, Callable[[], Any]], Any]
    _enqueue: Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], list[int]]
    _audit: Callable[[str, str, str | None, int | None, str], None]

    @handles("store.tools.load")
    async def tools_load(self, msg: Message) -> Any:
        return load_tools(self.db, int(time.time() * 1000))

    @handles("store.tools.get")
    async def tools_get(self, msg: Message) -> Any:
        """One call's row (`call_id`), or null."""
        return {"call": call_row(self.db, str(msg.body["call_id"]))}

    @handles("store.tools.deadlines")
    async def tools_deadlines(self, msg: Message) -> Any:
        """The latest deadline operations of one app in one conversation (`app_scope`,
        `conversation_id`), newest first."""
        rows = self.db.execute(
            f"SELECT {', '.join(DEADLINE_COLUMNS)} FROM tool_deadlines"
            " WHERE app_scope = ? AND conversation_id = ?"
            " ORDER BY requested_ms DESC, rowid DESC LIMIT ?",
            (str(msg.body["app_scope"]), str(msg.body["conversation_id"]), RECENT_DEADLINES),
        )
        return {"deadlines": rows_of(DEADLINE_COLUMNS, rows)}

    @handles("store.tools.write")
    async def tools_write(self, msg: Message) -> Any:
        """One step of the tool router, in one transaction.

        Body: `accept` [{row, outbox, audit}: a call taken, inserted with its envelopes and
        audit rows only if its call_id is new], `calls` [call rows, replaced whole],
        `deadlines` [deadline operation rows, replaced whole: written with the step of
        their call], `inventories` [inventory rows, replaced whole], `revision` (the highest issued;
        never lowered), `outbox` [items], `audit` [{code, detail, message_id}]. Reply:
        `known` {call_id: row} for the accepted calls that existed already.
        """
        body = msg.body
        queued: list[dict[str, Any]] = []  # the outbox items this step adds, for the wake

        def apply() -> dict[str, Any]:
            known: dict[str, Any] = {}
            marks = ", ".join("?" * len(CALL_COLUMNS))
            for entry in body.get("accept", ()):
                row = entry["row"]
                existing = call_row(self.db, row["call_id"])
                if existing is not None:  # a call id is taken once: nothing of it is written
                    known[row["call_id"]] = existing
                    continue
                self.db.execute(
                    f"INSERT INTO tool_calls ({', '.join(CALL_COLUMNS)}) VALUES ({marks})",
                    _CODEC.values(CALL_COLUMNS, row),
                )
                self._enqueue(list(entry.get("outbox", ())), queued)
                self._write_audit(entry.get("audit", ()), msg.sender)
            _CODEC.replace(self.db, "tool_calls", CALL_COLUMNS, body.get("calls", ()))
            _CODEC.replace(self.db, "tool_deadlines", DEADLINE_COLUMNS, body.get("deadlines", ()))
            _CODEC.replace(
                self.db, "tool_inventories", INVENTORY_COLUMNS, body.get("inventories", ())
            )
            revision = body.get("revision")
            if revision is not None:
                self.db.execute(
                    "INSERT INTO tool_state (name, value) VALUES ('revision', ?)"
                    " ON CONFLICT(name) DO UPDATE SET value = max(value, excluded.value)",
                    (int(revision),),
                )
            self._enqueue(list(body.get("outbox", ())), queued)
            self._write_audit(body.get("audit", ()), msg.sender)
            return {"known": known}

        reply = self._once(msg, apply)
        if body.get("outbox") or body.get("accept"):
            # The items ride with the wake, so the transport need not read them back (a
            # replay, which queued nothing new, wakes it to read what is pending).
            wake = {"items": queued} if queued else {}
            await self.cast("transport", "transport.outbox.wake", wake)
        return reply

    def _write_audit(self, entries: Iterable[dict[str, Any]], source: str) -> None:
        for entry in entries:
            code, detail = str(entry["code"]), str(entry.get("detail", ""))
            self._audit(code, detail, entry.get("message_id"), None, source)
