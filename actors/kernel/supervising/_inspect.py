"""Plain records of mailboxes and messages, shared by the control server and the offline CLI."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import msgpack

from .._ids import derive_id
from ..wire import unpack_body
from ._mailbox import MailboxStore, MessageRow, State
from ._mailbox_views import EFFECTIVE_STATE


def _plain(value: Any) -> Any:
    """msgpack values as JSON-safe values (bytes become hex) for --json output."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def describe_message(row: MessageRow, *, body: bool = False) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": row.id,
        "seq": row.seq,
        "from": row.sender,
        "to": row.recipient,
        "type": row.type,
        "state": row.state.name.lower(),
        "attempts": row.attempts,
        "failures": row.failures,
        "age_s": round(time.time() - row.created_ms / 1000, 3),
        "error": row.error,
    }
    if body:
        packed = msgpack.unpackb(row.frame, raw=False).get("body")
        record["body"] = _plain(unpack_body(packed) if isinstance(packed, bytes) else packed)
    return record


def mailbox_listing(
    store: MailboxStore, name: str | None, *, body: bool, limit: int, dead_only: bool = False
) -> list[dict[str, Any]]:
    states = (State.DEAD,) if dead_only else (State.PENDING, State.INFLIGHT, State.DEAD)
    rows = store.messages(recipient=name, states=states, limit=limit)
    return [describe_message(row, body=body) for row in rows]


def mailbox_counts(store: MailboxStore, *, inflight: bool = True) -> dict[str, dict[str, int]]:
    return {
        name: {"pending": c.pending, "inflight": c.inflight, "dead": c.dead}
        for name, c in store.counts(inflight=inflight).items()
    }


# How many ids derived from a message `message_path` looks for: what its handler emitted.
DERIVED_LOOKED_UP = 64


def message_path(path: Path, message_id: str) -> list[dict[str, Any]]:
    """Every row of the mailbox file at `path` that concerns `message_id`, in seq order:
    the message itself (`this`), what its handler emitted (`emitted`: ids derived from it)
    and messages whose frame carries the id (`carries`: an envelope's id in a body, a
    call's `corr`). Reads the file read-only, so the runtime may be up or stopped. A call's
    stored reply is added to the message it answers (`reply`)."""
    if not path.exists():
        return []
    derived = {derive_id(message_id, n) for n in range(DERIVED_LOOKED_UP)}
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    records: list[dict[str, Any]] = []
    try:
        columns = (
            f"seq, id, recipient, sender, type, {EFFECTIVE_STATE}, attempts, failures,"
            " error, created_ms, done_ms"
        )
        wanted = ", ".join("?" * (len(derived) + 1))
        rows = db.execute(
            f"SELECT {columns} FROM messages WHERE id IN ({wanted})"
            " OR instr(frame, CAST(? AS BLOB)) > 0 ORDER BY seq",
            (message_id, *derived, message_id),
        ).fetchall()
        for seq, mid, to, sender, kind, state, attempts, failures, error, created, done in rows:
            record: dict[str, Any] = {
                "seq": seq,
                "id": mid,
                "relation": "this"
                if mid == message_id
                else ("emitted" if mid in derived else "carries"),
                "from": sender,
                "to": to,
                "type": kind,
                "state": State(state).name.lower(),
                "attempts": attempts,
                "failures": failures,
                "error": error,
                "created_ms": created,
                "done_ms": done,
            }
            reply = db.execute(
                "SELECT frame FROM replies WHERE caller = ? AND request_id = ?", (sender, mid)
            ).fetchone()
            if reply is not None:
                answer = unpack_body(bytes(reply[0]))
                error_field = answer.get("error") if isinstance(answer, dict) else None
                record["reply"] = {"error": _plain(error_field)} if error_field else {"ok": True}
            records.append(record)
    except sqlite3.Error:
        return []
    finally:
        db.close()
    return records


def mailbox_names(store: MailboxStore) -> list[str]:
    """Every actor the mailbox file has held messages for (a stopped runtime's actors)."""
    rows = store._db.execute(
        "SELECT recipient FROM cursors UNION SELECT DISTINCT recipient FROM messages"
    ).fetchall()
    return sorted(str(row[0]) for row in rows)
