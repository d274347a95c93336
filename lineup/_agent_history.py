"""What an AppServer holds that the runtime sent into one conversation, read from its file.

The AppServer's `appserver.db` is opened read-only, so this works whether the AppServer is
running (its writes go on; SQLite's WAL lets a reader see the last commit) or stopped, and
never changes the file. The agent's own messages are left out: this is what the agent has
received, or will receive, from the runtime.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from peers.appserver import STORE_FILE


def _open(appserver_dir: Path) -> sqlite3.Connection:
    path = appserver_dir / STORE_FILE
    if not path.is_file():
        raise ValueError(
            f"there is no AppServer record in {appserver_dir}; point --data-dir at the data "
            "dir of a runtime that has run (or --appserver-dir at an AppServer's own dir)"
        )
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=10)


def _row(seq: int, body: str, sender_kind: str, sender_id: str, accepted_at: str) -> dict[str, Any]:
    message = json.loads(body)
    correlation = message.get("correlation") or {}
    row: dict[str, Any] = {
        "seq": seq,
        "message_id": message["id"],
        "type": message["type"],
        "sender": {"kind": sender_kind, "id": sender_id},
        "timestamp": message.get("timestamp"),
        "accepted_at": accepted_at,
    }
    for key in ("call_id", "reply_to"):
        if correlation.get(key) is not None:
            row[key] = correlation[key]
    payload = message.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("text"), str):
        row["text"] = payload["text"]
    return row


def read_agent_history(appserver_dir: Path, conversation: str) -> list[dict[str, Any]]:
    """The messages the runtime sent into `conversation`, in stream order: each one's seq,
    message id, type, sender, timestamp, acceptance time, call id and reply-to (when it has
    them) and text (for a message with one). `ValueError` with a sentence when there is no
    AppServer record or no such conversation."""
    try:
        db = _open(appserver_dir)
        try:
            known = db.execute(
                "SELECT 1 FROM conversations WHERE id = ?", (conversation,)
            ).fetchone()
            if known is None:
                names = [row[0] for row in db.execute("SELECT id FROM conversations ORDER BY id")]
                listed = ", ".join(repr(name) for name in names[:10]) or "none yet"
                raise ValueError(
                    f"the AppServer in {appserver_dir} has no conversation {conversation!r} "
                    f"(it has {listed}); pass --conversation with one of them"
                )
            rows = db.execute(
                "SELECT seq, body, sender_kind, sender_id, accepted_at FROM messages"
                " WHERE conversation_id = ? AND sender_kind != 'agent' ORDER BY seq",
                (conversation,),
            ).fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise ValueError(
            f"cannot read the AppServer record in {appserver_dir} ({exc}); check that "
            f"{STORE_FILE} there is an AppServer's and readable"
        ) from None
    return [_row(*row) for row in rows]
