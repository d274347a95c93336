"""The app registry's rows in `runtime.db`: records, operations,
instances and settings (the focus stack, the default app).

The app manager owns every decision; the store keeps what it is told, a whole step in one
transaction (`store.apps.write`), applied once by the request's id. So a step of an
operation — "the bundle is verified and cached", "the record now says 1.1.0 with 1.0.0 as
previous, and the operation succeeded" — is on disk entirely or not at all.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any, Final

from actors.contracts import Code, ContractError
from actors.kernel import Actor, Message, handles

from ._app_rows import INSTANCE_COLUMNS, OPERATION_COLUMNS, RECORD_COLUMNS, load_apps, row_values
from ._artifacts import forget_artifacts
from ._diagnostics import forget_diagnostics
from ._session_data import forget_scopes
from .door import AppsWrite, Empty


def _replace(db: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: list[Any]) -> None:
    if rows:
        marks = ", ".join("?" * len(columns))
        db.executemany(
            f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) VALUES ({marks})",
            [row_values(columns, row) for row in rows],
        )


def write_apps(db: sqlite3.Connection, body: dict[str, Any]) -> None:
    """One step of the app manager: rows replaced whole, rows removed, settings set."""
    _replace(db, "app_records", RECORD_COLUMNS, list(body.get("records", ())))
    _replace(db, "app_operations", OPERATION_COLUMNS, list(body.get("operations", ())))
    _replace(db, "app_instances", INSTANCE_COLUMNS, list(body.get("instances", ())))
    for scope in body.get("remove_records", ()):
        db.execute("DELETE FROM app_records WHERE app_scope = ?", (scope,))
    # A removed app's session data goes with its record (disable keeps it).
    forget_scopes(db, body.get("remove_records", ()))
    # A removed app's artifacts too: their rows here, their files once this is committed.
    forget_artifacts(db, body.get("remove_records", ()))
    for scope in body.get("remove_records", ()):  # and what it reported of itself
        forget_diagnostics(db, scope)
    for instance in body.get("remove_instances", ()):
        db.execute("DELETE FROM app_instances WHERE instance_id = ?", (instance,))
    keep = body.get("keep_operations")
    if isinstance(keep, int) and keep >= 0:  # the oldest finished ones go first
        finished = "state IN ('succeeded', 'failed', 'rolled_back')"
        db.execute(
            f"DELETE FROM app_operations WHERE {finished} AND operation_id NOT IN"
            f" (SELECT operation_id FROM app_operations WHERE {finished}"
            " ORDER BY created_ms DESC, rowid DESC LIMIT ?)",
            (keep,),
        )
    for name, value in dict(body.get("settings", {})).items():
        db.execute(
            "INSERT OR REPLACE INTO app_settings (name, value) VALUES (?, ?)",
            (name, json.dumps(value, separators=(",", ":"))),
        )


# The registry is the app manager's: an app (any actor) that could write it would enable
# itself, change its subscriptions or point a record at a directory of its choosing.
WRITERS: Final = frozenset({"app_manager"})
READERS: Final = frozenset({"app_manager", "router", "tool_router", "capability_gateway"})


def _only(msg: Message, senders: frozenset[str]) -> None:
    if msg.sender not in senders:
        raise ContractError(Code.SENDER_NOT_ALLOWED, f"{msg.type} is not {msg.sender}'s to send")


class AppTables(Actor):
    """The store's handlers for the app registry (mixed into `StoreActor`)."""

    db: sqlite3.Connection
    _once: Callable[[Message, Callable[[], Any]], Any]
    sweep_artifacts: Callable[[], int]

    @handles("store.apps.load")
    async def apps_load(self, msg: Message[Empty]) -> Any:
        _only(msg, READERS)
        return load_apps(self.db)

    @handles("store.apps.write")
    async def apps_write(self, msg: Message[AppsWrite]) -> Any:
        """Body: `records`, `operations`, `instances` (whole rows), `remove_records`,
        `remove_instances`, `settings` {name: value}; reply {"written": True}, once."""

        _only(msg, WRITERS)

        def apply() -> dict[str, Any]:
            write_apps(self.db, dict(msg.body))
            return {"written": True}

        reply = self._once(msg, apply)
        if msg.body.get("remove_records"):  # a removed app's artifact files: no row names them
            self.sweep_artifacts()
        return reply
