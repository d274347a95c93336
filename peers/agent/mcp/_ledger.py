"""The bridge's record on its own disk (`mcp.db` in its state dir): each MCP request it took
(its key → the call or message it became, and its one outcome), and the user's messages.

**Requests.** A request is keyed by the client's idempotency key, or by a key of its own
when the client gave none. Its first sight mints a root message id; the call id of attempt
N is derived from it (`call_<derive_message_id(root, N)>`), and a message the bridge sends
takes the root as its id. The row is written before anything leaves, so whatever the
bridge sends for a key always carries the same ids: the runtime keeps a call id once and
the AppServer a message id once, and a request asked again (after a restart of the bridge
or of the client) finds its outcome here, or its call still open, never a second execution.
A key's first sight is fsync'd (`synchronous=FULL` for that one transaction, ≈2.4 ms on
the machine of docs/benchmarks.md) so it outlives a power cut; everything else is WAL with
`synchronous=NORMAL` (≈0.02 ms), which a killed process never loses.

**User messages.** What the user wrote in the conversation, by the AppServer's stream
number (`seq`), which is the cursor an agent reads from: the bridge stores each one before
its cursor moves on, so a restart re-reads at most what it had not stored.

A finished request is kept `KEEP_DAYS` days and the latest `KEEP_MESSAGES` user messages,
pruned when the bridge starts.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from contracts import derive_message_id, new_message_id

LEDGER_FILE: Final = "mcp.db"
KEEP_DAYS: Final = 30
KEEP_MESSAGES: Final = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    key TEXT PRIMARY KEY,
    request TEXT NOT NULL,      -- canonical JSON of the tool's name and arguments
    root TEXT NOT NULL,         -- a message id: the ids of what the request became derive from it
    attempt INTEGER NOT NULL,   -- which call id is current (a stale revision's retry is the next)
    call_id TEXT,               -- the current attempt's call, for a tool call
    final TEXT,                 -- {"type", "payload"} of its one outcome, once known
    created_ms INTEGER NOT NULL,
    ended_ms INTEGER
);
CREATE INDEX IF NOT EXISTS requests_by_call ON requests (call_id);
CREATE TABLE IF NOT EXISTS user_messages (
    seq INTEGER PRIMARY KEY,    -- the AppServer's stream number: the reader's cursor
    message_id TEXT NOT NULL,
    text TEXT NOT NULL,
    format TEXT NOT NULL,
    at TEXT NOT NULL,           -- the message's own timestamp (RFC 3339, UTC)
    mode TEXT                   -- the conversation's mode it was sent in: im | audio
);
"""


def canonical(value: Any) -> str:
    """One text per JSON value: what a repeated request is compared by."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_id_of(root: str, attempt: int) -> str:
    return f"call_{derive_message_id(root, attempt)}"


@dataclass(frozen=True, slots=True)
class Request:
    key: str
    request: str
    root: str
    attempt: int
    call_id: str | None
    final: dict[str, Any] | None


def _row(row: tuple[Any, ...]) -> Request:
    key, request, root, attempt, call_id, final = row
    return Request(
        key, request, root, attempt, call_id, None if final is None else json.loads(final)
    )


_COLUMNS: Final = "key, request, root, attempt, call_id, final"


class Ledger:
    """The bridge's SQLite file; one process at a time (the bridge holds its state dir's
    lock). Calls are short, synchronous statements on the bridge's own loop."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LEDGER_FILE
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(user_messages)")}
        if "mode" not in columns:  # a ledger from before messages kept their mode
            self._db.execute("ALTER TABLE user_messages ADD COLUMN mode TEXT")
        self._prune()

    def close(self) -> None:
        self._db.close()

    def _prune(self) -> None:
        cutoff = int(time.time() * 1000) - KEEP_DAYS * 86_400_000
        with self._db:
            self._db.execute("DELETE FROM requests WHERE ended_ms < ?", (cutoff,))
            self._db.execute(
                "DELETE FROM user_messages WHERE seq <= "
                "(SELECT seq FROM user_messages ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                (KEEP_MESSAGES,),
            )

    # -- requests --------------------------------------------------------------------------

    def get(self, key: str) -> Request | None:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM requests WHERE key = ?", (key,)).fetchone()
        return None if row is None else _row(row)

    def begin(self, key: str | None, request: str, *, tool_call: bool) -> Request:
        """The request under `key`, recorded now if it is new (a fresh key when None: a
        request no one can ask again)."""
        if key is not None and (known := self.get(key)) is not None:
            return known
        root = new_message_id()
        fresh = Request(
            key or f"once-{root}",
            request,
            root,
            1,
            call_id_of(root, 1) if tool_call else None,
            None,
        )
        durable = key is not None
        if durable:
            self._db.execute("PRAGMA synchronous=FULL")
        try:
            with self._db:
                self._db.execute(
                    "INSERT INTO requests (key, request, root, attempt, call_id, created_ms)"
                    " VALUES (?, ?, ?, 1, ?, ?)",
                    (fresh.key, request, root, fresh.call_id, int(time.time() * 1000)),
                )
        finally:
            if durable:
                self._db.execute("PRAGMA synchronous=NORMAL")
        return fresh

    def next_attempt(self, request: Request) -> Request:
        """The request's next call id (its current call was refused before it ran)."""
        attempt = request.attempt + 1
        call_id = call_id_of(request.root, attempt)
        with self._db:
            self._db.execute(
                "UPDATE requests SET attempt = ?, call_id = ? WHERE key = ?",
                (attempt, call_id, request.key),
            )
        return Request(request.key, request.request, request.root, attempt, call_id, None)

    def finish(self, key: str, final: dict[str, Any]) -> None:
        """Records the request's one outcome (the first one recorded stays)."""
        with self._db:
            self._db.execute(
                "UPDATE requests SET final = ?, ended_ms = ? WHERE key = ? AND final IS NULL",
                (json.dumps(final), int(time.time() * 1000), key),
            )

    def key_of_call(self, call_id: str) -> str | None:
        """The open request whose current call is `call_id`."""
        row = self._db.execute(
            "SELECT key FROM requests WHERE call_id = ? AND final IS NULL", (call_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    # -- the user's messages -------------------------------------------------------------

    def add_user_message(
        self, seq: int, message_id: str, text: str, fmt: str, at: str, *, mode: str | None
    ) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO user_messages (seq, message_id, text, format, at, mode)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (seq, message_id, text, fmt, at, mode),
            )

    def user_messages(self, since: int, limit: int) -> list[dict[str, Any]]:
        """A message without a mode (the user's side said none) was written: `im`."""
        rows = self._db.execute(
            "SELECT seq, text, format, at, mode FROM user_messages WHERE seq > ?"
            " ORDER BY seq LIMIT ?",
            (since, limit),
        ).fetchall()
        return [
            {"cursor": seq, "text": text, "format": fmt, "at": at, "mode": mode or "im"}
            for seq, text, fmt, at, mode in rows
        ]
