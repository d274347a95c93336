"""`tool_router.db`: the tool router's own state, beside the mailbox in the data dir.

- `tool_calls` (key `call_id`): every call with its history (`_calls`);
- `tool_deadlines` (`call_id`): the deadline operation a call was handed over as
  (`_deadlines`);
- `tool_inventories` (`conversation_id`): the inventory each conversation was last given,
  and why each tool is or is not in it;
- `tool_state` (`name`): `revision`, the highest ever issued (never reused);
- `tool_steps` (`cause`): what a step emitted, kept while its cause may come again
  (`_steps`);
- `lineup_applied` (`id`): the messages applied (the kernel's applied-once rule).

Only the tool router writes it, one step a transaction (`_steps`); the command line reads it
read-only (`_reads`). It keeps the mailbox's durability setting: at `synchronous=NORMAL` its
WAL is synced before anything a step decided leaves for the agent (`sync_wal`).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from actors.kernel import bound_wal, ensure_applied_table, open_read_only

DB_FILE: Final = "tool_router.db"

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
# Columns that hold JSON, kept as compact text.
JSON_COLUMNS: Final = frozenset(
    {"arguments", "output", "history", "payload", "visibility", "display"}
)
RECENT_DEADLINES: Final = 10  # what an app is told about its deadline operations
# Operations ended this recently are told to their app again when the tool router starts:
# well within the mailbox's dedup window, so what was told already is kept once.
RETELL_MS: Final = 3_600_000
FINAL_STATES: Final = ("succeeded", "failed")

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS tool_calls (
    call_id TEXT PRIMARY KEY, envelope_id TEXT, conversation_id TEXT, agent_id TEXT,
    app_scope TEXT, method TEXT, contract_version TEXT, arguments TEXT, revision INTEGER,
    instance_id TEXT,
    state TEXT,  -- accepted | starting | running | deadline | succeeded | failed
    code TEXT, detail TEXT, output TEXT, history TEXT, created_ms INTEGER,
    updated_ms INTEGER, deadline_ms INTEGER
);
CREATE INDEX IF NOT EXISTS tool_calls_state ON tool_calls (state);
CREATE TABLE IF NOT EXISTS tool_deadlines (
    call_id TEXT PRIMARY KEY, operation_id TEXT, app_scope TEXT, conversation_id TEXT,
    instance_id TEXT, duration_ms INTEGER, display TEXT,
    state TEXT,  -- waiting_foreground | running | paused | finished | interrupted
    requested_ms INTEGER, started_ms INTEGER,
    ends_ms INTEGER,  -- none while paused
    ended_ms INTEGER, noticed_ms INTEGER, ended_by TEXT,
    remaining_ms INTEGER,  -- while paused: what is left of its duration
    pauses INTEGER
);
CREATE INDEX IF NOT EXISTS tool_deadlines_app
    ON tool_deadlines (app_scope, conversation_id, requested_ms);
CREATE TABLE IF NOT EXISTS tool_inventories (
    conversation_id TEXT PRIMARY KEY, agent_id TEXT, revision INTEGER, hash TEXT,
    payload TEXT, visibility TEXT, published_ms INTEGER
);
CREATE TABLE IF NOT EXISTS tool_state (name TEXT PRIMARY KEY, value INTEGER);
CREATE TABLE IF NOT EXISTS tool_steps (
    cause TEXT PRIMARY KEY,
    seq INTEGER,  -- the causing delivery's mailbox seq; none for a step of the router's own
    at_ms INTEGER,
    outputs BLOB,  -- msgpack: [[to, type, id, body], ...] in the order they were sent
    reply BLOB  -- msgpack: the answer to a call, {"body": ...} or {"error": {code, detail}}
);
CREATE INDEX IF NOT EXISTS tool_steps_seq ON tool_steps (seq);
CREATE INDEX IF NOT EXISTS tool_steps_at ON tool_steps (at_ms);
"""


def db_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / DB_FILE


def open_db(data_dir: str | Path, *, synchronous: str) -> sqlite3.Connection:
    """The tool router's connection: autocommit (each step owns its transaction), WAL."""
    path = db_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, timeout=10)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    bound_wal(db)
    db.executescript(_SCHEMA)
    ensure_applied_table(db)
    return db


def open_readonly(data_dir: str | Path) -> sqlite3.Connection:
    """`tool_router.db` for reading only (it must exist), in autocommit."""
    return open_read_only(db_path(data_dir))


def sync_wal(data_dir: str | Path) -> None:
    """Make every transaction committed so far durable, as a commit at FULL would: one
    fsync of the WAL covers every commit since the last."""
    path = db_path(data_dir)
    fd = os.open(f"{path}-wal", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def values(columns: tuple[str, ...], row: dict[str, Any]) -> tuple[Any, ...]:
    """The row's values in `columns` order, its JSON columns encoded (null stays null)."""
    return tuple(
        json.dumps(row.get(c), separators=(",", ":"))
        if c in JSON_COLUMNS and row.get(c) is not None
        else row.get(c)
        for c in columns
    )


def rows_of(columns: tuple[str, ...], cursor: Iterable[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Rows as maps, their JSON columns decoded."""
    out = []
    for found in cursor:
        row = dict(zip(columns, found, strict=True))
        for column in JSON_COLUMNS & row.keys():
            if row[column] is not None:
                row[column] = json.loads(row[column])
        out.append(row)
    return out


def replace(
    db: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: Iterable[dict[str, Any]]
) -> None:
    """Write each row whole, over any row with the same key."""
    statement = (
        f"INSERT OR REPLACE INTO {table} ({', '.join(columns)})"
        f" VALUES ({', '.join('?' * len(columns))})"
    )
    db.executemany(statement, [values(columns, row) for row in rows])


def call_row(db: sqlite3.Connection, call_id: str) -> dict[str, Any] | None:
    rows = rows_of(
        CALL_COLUMNS,
        db.execute(
            f"SELECT {', '.join(CALL_COLUMNS)} FROM tool_calls WHERE call_id = ?", (call_id,)
        ),
    )
    return rows[0] if rows else None


def latest_deadlines(
    db: sqlite3.Connection, app_scope: str, conversation_id: str
) -> list[dict[str, Any]]:
    """The latest deadline operations of one app in one conversation, newest first."""
    rows = db.execute(
        f"SELECT {', '.join(DEADLINE_COLUMNS)} FROM tool_deadlines"
        " WHERE app_scope = ? AND conversation_id = ?"
        " ORDER BY requested_ms DESC, rowid DESC LIMIT ?",
        (app_scope, conversation_id, RECENT_DEADLINES),
    )
    return rows_of(DEADLINE_COLUMNS, rows)


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
