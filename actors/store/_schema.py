"""The tables of `runtime.db` and how the store opens it.

Every table is keyed so that applying the same message twice changes nothing: messages by
envelope id, the outbox by idempotency key, requests by the kernel message id that asked.
An app's inbox is not here: it is the app's mailbox, mirrored in the app's own `app.db`.
The schema is created through sqlite-utils; writes are plain SQL on the same connection,
because sqlite-utils commits on its own (`with conn:`) and would end the `applied_once`
transaction early.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

import sqlite_utils

from actors.kernel import ensure_applied_table

from ._file import DB_FILE, open_readonly

# The connection and the conversations: what the runtime must find again after a crash.
_TABLES: Final[dict[str, tuple[dict[str, type], str | tuple[str, ...]]]] = {
    "conversations": (
        {"conversation_id": str, "agent_id": str, "first_seq": int, "created_ms": int},
        "conversation_id",
    ),
    "messages": (
        {
            "id": str,
            "seq": int,
            "conversation_id": str,
            "app_scope": str,
            "type": str,
            "sender_kind": str,
            "sender_id": str,
            "envelope": str,
            "received_ms": int,
        },
        "id",
    ),
    "cursor": ({"name": str, "value": int}, "name"),
    "outbox": (
        {
            "local_order": int,
            "key": str,
            "envelope": str,
            "origin": str,
            "conversation_id": str,
            "state": str,  # pending | accepted | rejected (docs/protocol.md §4.5)
            "seq": int,
            "code": str,
            "detail": str,
            "created_ms": int,
            "settled_ms": int,
        },
        "local_order",
    ),
    "audit": (
        {
            "pos": int,
            "at_ms": int,
            "code": str,
            "detail": str,
            "message_id": str,
            "seq": int,
            "source": str,
            # A routine action repeated within a minute is counted on its first row
            # (`_upkeep.write_audit`): how many it stands for, and the last one's time.
            "repeats": int,
            "last_ms": int,
        },
        "pos",
    ),
    "lifecycle": ({"name": str, "state": str, "detail": str, "at_ms": int}, "name"),
    # Each app instance's session data: the app's JSON object (compact text), the revision
    # of its last replace, its size (`_session_data`).
    "app_session_data": (
        {
            "app_scope": str,
            "instance_id": str,
            "data": str,
            "revision": int,
            "size_bytes": int,
            "updated_ms": int,
        },
        ("app_scope", "instance_id"),
    ),
    # The answers to each app's newest session-data replaces, by its message id
    # (`_session_data`: a redelivered replace gets its first answer).
    "app_session_requests": (
        {"pos": int, "app_scope": str, "request_id": str, "reply": str},
        "pos",
    ),
    # What each app reports of itself: its latest health and its newest log events.
    "app_diagnostics": (
        {"app_scope": str, "status": str, "detail": str, "at_ms": int, "events_total": int},
        "app_scope",
    ),
    "app_diagnostic_events": (
        {"pos": int, "app_scope": str, "at_ms": int, "level": str, "name": str, "fields": str},
        "pos",
    ),
    # Artifacts an app made: the metadata; the content is `artifacts/<artifact_id>` beside
    # this file, named by the id (`_artifacts`).
    "artifacts": (
        {
            "artifact_id": str,
            "app_scope": str,
            "instance_id": str,
            "conversation_id": str,
            "title": str,
            "media_type": str,
            "size": int,
            "sha256": str,
            "created_ms": int,
            "replaceable": int,  # 1: let go, oldest first, to make room for a later one
        },
        "artifact_id",
    ),
    "requests": ({"id": str, "reply": str}, "id"),
}

_UNIQUE: Final = [("outbox", ("key",)), ("app_session_requests", ("app_scope", "request_id"))]
_INDEXES: Final = [
    ("messages", ("conversation_id", "seq")),
    ("outbox", ("state", "local_order")),
    ("app_session_requests", ("app_scope", "pos")),
    ("artifacts", ("app_scope", "created_ms")),
]


def open_db(
    data_dir: str | Path, *, synchronous: str = "FULL", readonly: bool = False
) -> sqlite3.Connection:
    """The store's connection: autocommit (so `applied_once` owns each transaction), WAL."""
    if readonly:
        return open_readonly(data_dir)
    path = Path(data_dir) / DB_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, timeout=10)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    create_schema(db)
    return db


def create_schema(db: sqlite3.Connection) -> None:
    database = sqlite_utils.Database(db)
    for name, (columns, pk) in _TABLES.items():
        table = database.table(name)
        if not table.exists():
            table.create(columns, pk=pk, not_null=set(), if_not_exists=True)
            continue
        # A database from before a column was added gets it (empty in the rows it has).
        for column, kind in columns.items():
            if column not in table.columns_dict:
                table.add_column(column, kind)
    for name, unique in _UNIQUE:
        database.table(name).create_index(unique, unique=True, if_not_exists=True)
    for name, indexed in _INDEXES:
        database.table(name).create_index(indexed, if_not_exists=True)
    ensure_applied_table(db)
