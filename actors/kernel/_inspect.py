"""Plain records of mailboxes and messages, shared by the control server and the offline CLI."""

from __future__ import annotations

import time
from typing import Any

import msgpack

from ._frames import unpack_body
from ._mailbox import MailboxStore, MessageRow, State


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
