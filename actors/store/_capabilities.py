"""The capability gateway's rows in `runtime.db`: its requests and the user's grants.

The gateway owns every decision; the store keeps what it is told, one step in one
transaction (`store.capabilities.write`) together with that step's audit rows, applied once
by the request's id. So "the effect is starting" is on disk before the effect, and an
outcome and its audit row are one commit.

A request is inserted only if its key is new (`insert`): the row already there stands, so a
request asked again is never taken twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, Final

from actors.kernel import Actor, Message, handles

from ._rows import RowCodec

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
_CODEC: Final = RowCodec(frozenset({"input", "prepared", "output"}))
OPEN_STATES: Final = ("asking", "running")


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


class CapabilityTables(Actor):
    """The store's handlers for the capability gateway (mixed into `StoreActor`)."""

    db: sqlite3.Connection
    _once: Callable[[Message, Callable[[], Any]], Any]
    _audit: Callable[[str, str, str | None, int | None, str], None]

    @handles("store.capabilities.load")
    async def capabilities_load(self, msg: Message) -> Any:
        """The open requests (oldest first) and every grant."""
        marks = ", ".join("?" * len(OPEN_STATES))
        open_rows = self.db.execute(
            f"SELECT {', '.join(REQUEST_COLUMNS)} FROM capability_requests"
            f" WHERE state IN ({marks}) ORDER BY created_ms, rowid",
            OPEN_STATES,
        )
        return {"requests": _CODEC.rows(REQUEST_COLUMNS, open_rows), "grants": grant_rows(self.db)}

    @handles("store.capabilities.get")
    async def capabilities_get(self, msg: Message) -> Any:
        """One request's row (`request_id`), or null."""
        return {"request": request_row(self.db, str(msg.body["request_id"]))}

    @handles("store.capabilities.write")
    async def capabilities_write(self, msg: Message) -> Any:
        """One step of the gateway, in one transaction.

        Body: `insert` (a request row, written only if its key is new), `requests` (rows
        replaced whole), `grants` (rows replaced whole), `revoke` {app_scope, capability}
        (its grant removed), `end_sessions` (a boot id: session grants of any other run of
        the runtime removed), `forget_before` (ms: finished requests last changed before it
        removed), `audit` [{code, detail, message_id}]. Reply: `revoked` (how many grants
        were removed).
        """
        body = msg.body

        def apply() -> dict[str, Any]:
            request_marks = ", ".join("?" * len(REQUEST_COLUMNS))
            if body.get("insert") is not None:
                self.db.execute(
                    f"INSERT INTO capability_requests ({', '.join(REQUEST_COLUMNS)})"
                    f" VALUES ({request_marks}) ON CONFLICT(request_id) DO NOTHING",
                    _CODEC.values(REQUEST_COLUMNS, body["insert"]),
                )
            _CODEC.replace(
                self.db, "capability_requests", REQUEST_COLUMNS, body.get("requests", ())
            )
            _CODEC.replace(self.db, "capability_grants", GRANT_COLUMNS, body.get("grants", ()))
            revoked = 0
            if body.get("revoke") is not None:
                revoked = self.db.execute(
                    "DELETE FROM capability_grants WHERE app_scope = ? AND capability = ?",
                    (body["revoke"]["app_scope"], body["revoke"]["capability"]),
                ).rowcount
            if body.get("end_sessions") is not None:
                self.db.execute(
                    "DELETE FROM capability_grants WHERE scope = 'session' AND boot != ?",
                    (body["end_sessions"],),
                )
            if body.get("forget_before") is not None:
                self.db.execute(
                    "DELETE FROM capability_requests WHERE state = 'finished' AND updated_ms < ?",
                    (int(body["forget_before"]),),
                )
            for entry in body.get("audit", ()):
                self._audit(
                    str(entry["code"]),
                    str(entry.get("detail", "")),
                    entry.get("message_id"),
                    None,
                    msg.sender,
                )
            return {"revoked": revoked}

        return self._once(msg, apply)
