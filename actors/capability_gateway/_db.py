"""`capability_gateway.db`: the capability gateway's own state, beside the mailbox.

- `capability_requests` (`request_id`, the app's scope and its id): every request with its
  outcome; an open one (`asking`, `running`) is taken up again when the gateway starts, a
  finished one is kept a while (asked again with its id, it gets its outcome), then goes;
- `capability_grants` (`app_scope`, `capability`): the user's grants (once, session,
  always);
- `audit_outbox` (`id`): the audit rows a step wrote, until the store has them: each is
  cast as `store.audit` under its row's id (sent twice, kept once) and then deleted, and
  what a crash left is sent when the gateway starts;
- `gateway_state` (`name`): `moved_from_runtime_db`, once an older data dir's rows were
  copied in (`_migration`).

Only the gateway writes it, one step a transaction (`GatewayFile.write`), so "the effect is
starting" is on disk before the effect and an outcome and its audit row are one commit. It
commits at `synchronous=FULL` whatever the mailbox's setting: its steps are few (a
request's two or three), and each one that precedes an effect must outlive a power cut.
The command line and the bench read it read-only (`read_grants`, `open_readonly`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from actors.kernel import RowCodec, new_id, open_read_only, read_file

DB_FILE: Final = "capability_gateway.db"

REQUEST_COLUMNS: Final = (
    "request_id",
    "app_scope",
    "capability",
    "purpose",
    "input",
    "prepared",
    "conversation_id",
    "caller",
    "kernel_id",
    "state",
    "status",
    "code",
    "output",
    "created_ms",
    "deadline_ms",
    "updated_ms",
)
GRANT_COLUMNS: Final = ("app_scope", "capability", "scope", "boot", "granted_ms")
OPEN_STATES: Final = ("asking", "running")
_CODEC: Final = RowCodec(frozenset({"input", "prepared", "output"}))

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS capability_requests (
    request_id TEXT PRIMARY KEY, app_scope TEXT, capability TEXT, purpose TEXT, input TEXT,
    prepared TEXT, conversation_id TEXT, caller TEXT, kernel_id TEXT,
    state TEXT,  -- asking | running | finished
    status TEXT, code TEXT, output TEXT, created_ms INTEGER, deadline_ms INTEGER,
    updated_ms INTEGER
);
CREATE INDEX IF NOT EXISTS capability_requests_state ON capability_requests (state);
CREATE TABLE IF NOT EXISTS capability_grants (
    app_scope TEXT, capability TEXT, scope TEXT, boot TEXT, granted_ms INTEGER,
    PRIMARY KEY (app_scope, capability)
);
CREATE TABLE IF NOT EXISTS audit_outbox (
    id TEXT PRIMARY KEY, code TEXT NOT NULL, detail TEXT NOT NULL, message_id TEXT
);
CREATE TABLE IF NOT EXISTS gateway_state (name TEXT PRIMARY KEY, value INTEGER);
"""


def db_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / DB_FILE


@dataclass(frozen=True)
class Written:
    revoked: int  # grants a `revoke` removed
    audit: list[tuple[str, dict[str, Any]]]  # (id, store.audit body), to hand to the store


class GatewayFile:
    """The gateway's connection: autocommit, each `write` one transaction."""

    def __init__(self, data_dir: str | Path) -> None:
        path = db_path(data_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, timeout=10)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    def load(self) -> dict[str, Any]:
        """The open requests (oldest first) and every grant."""
        marks = ", ".join("?" * len(OPEN_STATES))
        open_rows = self.db.execute(
            f"SELECT {', '.join(REQUEST_COLUMNS)} FROM capability_requests"
            f" WHERE state IN ({marks}) ORDER BY created_ms, rowid",
            OPEN_STATES,
        )
        return {"requests": _CODEC.rows(REQUEST_COLUMNS, open_rows), "grants": grant_rows(self.db)}

    def request(self, request_id: str) -> dict[str, Any] | None:
        return request_row(self.db, request_id)

    def write(self, body: dict[str, Any]) -> Written:
        """One step of the gateway, in one transaction. `insert` (a request row, written
        only if its key is new: the row already there stands), `requests` (rows replaced
        whole), `grants` (rows replaced whole), `revoke` {app_scope, capability} (its grant
        removed), `end_sessions` (a boot id: session grants of any other run removed),
        `forget_before` (ms: finished requests last changed before it removed), `audit`
        [{code, detail, message_id}] (kept until handed to the store)."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            if body.get("insert") is not None:
                db.execute(
                    f"INSERT INTO capability_requests ({', '.join(REQUEST_COLUMNS)})"
                    f" VALUES ({', '.join('?' * len(REQUEST_COLUMNS))})"
                    " ON CONFLICT(request_id) DO NOTHING",
                    _CODEC.values(REQUEST_COLUMNS, body["insert"]),
                )
            _CODEC.replace(db, "capability_requests", REQUEST_COLUMNS, body.get("requests", ()))
            _CODEC.replace(db, "capability_grants", GRANT_COLUMNS, body.get("grants", ()))
            revoked = 0
            if body.get("revoke") is not None:
                revoked = db.execute(
                    "DELETE FROM capability_grants WHERE app_scope = ? AND capability = ?",
                    (body["revoke"]["app_scope"], body["revoke"]["capability"]),
                ).rowcount
            if body.get("end_sessions") is not None:
                db.execute(
                    "DELETE FROM capability_grants WHERE scope = 'session' AND boot != ?",
                    (body["end_sessions"],),
                )
            if body.get("forget_before") is not None:
                db.execute(
                    "DELETE FROM capability_requests WHERE state = 'finished' AND updated_ms < ?",
                    (int(body["forget_before"]),),
                )
            audit = [(new_id(), _audit_body(entry)) for entry in body.get("audit", ())]
            db.executemany(
                "INSERT INTO audit_outbox (id, code, detail, message_id) VALUES (?, ?, ?, ?)",
                [(key, a["code"], a["detail"], a["message_id"]) for key, a in audit],
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return Written(revoked, audit)

    def audit_handed(self, ids: list[str]) -> None:
        """The store has these audit rows (their casts are in its mailbox)."""
        self.db.executemany("DELETE FROM audit_outbox WHERE id = ?", [(key,) for key in ids])

    def unhanded_audit(self) -> list[tuple[str, dict[str, Any]]]:
        """What a step wrote for the store and a crash kept from it, oldest first."""
        rows = self.db.execute(
            "SELECT id, code, detail, message_id FROM audit_outbox ORDER BY rowid"
        ).fetchall()
        return [(key, {"code": c, "detail": d, "message_id": m}) for key, c, d, m in rows]


def _audit_body(entry: dict[str, Any]) -> dict[str, Any]:
    message_id = entry.get("message_id")
    return {
        "code": str(entry["code"]),
        "detail": str(entry.get("detail", "")),
        "message_id": None if message_id is None else str(message_id),
    }


def request_row(db: sqlite3.Connection, request_id: str) -> dict[str, Any] | None:
    found = _CODEC.rows(
        REQUEST_COLUMNS,
        db.execute(
            f"SELECT {', '.join(REQUEST_COLUMNS)} FROM capability_requests WHERE request_id = ?",
            (request_id,),
        ),
    )
    return found[0] if found else None


def grant_rows(db: sqlite3.Connection) -> list[dict[str, Any]]:
    return _CODEC.rows(
        GRANT_COLUMNS,
        db.execute(
            f"SELECT {', '.join(GRANT_COLUMNS)} FROM capability_grants"
            " ORDER BY app_scope, capability"
        ),
    )


def read_grants(data_dir: str | Path) -> list[dict[str, Any]]:
    """The grants in force, read-only, the runtime up or not."""
    return read_file(db_path(data_dir), grant_rows, [])


def open_readonly(data_dir: str | Path) -> sqlite3.Connection:
    """`capability_gateway.db` for reading only (it must exist), in autocommit."""
    return open_read_only(db_path(data_dir))
