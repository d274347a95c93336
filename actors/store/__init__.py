"""The store actor: `runtime.db`, the runtime's own facts.

`_schema` creates the tables (sqlite-utils) and opens the connection; `_actor` holds the
handlers. Messages it answers (all bodies are msgpack maps; "call" means it replies); who may send
each, and its body's type, is in `door`:

| type | kind | body → reply |
|---|---|---|
| `store.inbound.persist` | cast | items, rejections, outbox, cursor, `deliver` (see below) |
| `store.cursor.get` | call | → `cursor` (highest AppServer seq durably stored) |
| `store.conversations` | call | → `conversations` {id: agent} |
| `store.outbox.enqueue` | call | `items` [{key, envelope, origin, conversation_id}] → `orders` |
| `store.outbox.pending` | call | `after`, `limit` → `items` [{order, key, envelope}] |
| `store.outbox.settle` | cast | `key`, `status`, `seq`/`code`/`detail`; then `app.action.state` |
| `store.audit` | cast | `code`, `detail`, `message_id`?, `seq`? |
| `store.lifecycle.set` | cast | `state`, `detail` (the connection lifecycle, from the transport) |
| `store.apps.load` | call | → `records`, `operations`, `instances`, `settings` |
| `store.apps.write` | call | whole rows of one app-manager step, in one transaction → `written` |
| `store.tools.load` | call | → open `calls`, their `deadlines`, `inventories`, `revision` |
| `store.tools.get` | call | `call_id` → `call` (its row, or null) |
| `store.tools.write` | call | a tool-router step (calls, deadlines, inventories, …) → `known` |
| `store.tools.deadlines` | call | `app_scope`, `conversation_id` → the latest `deadlines` |
| `store.diagnostics.report` | cast | an app's own `health` {status, detail}?, `events`? |
| `store.session_data.get` | call | an app's: `instance_id`? → `instance_id`, `data`, `revision` |
| `store.session_data.replace` | call | an app's: `instance_id`?, `data`, `expected_revision` → |
| | | `instance_id`, `revision` |
| `store.artifacts.create` | call | an app's: `data`, `media_type`, `title`, `conversation_id`? → |
| | | the reference {`artifact_id`, `title`, `media_type`, `size`} |
| `store.artifacts.read` | call | `artifact_id` → `artifact` (its row), `data` (its own app, chat) |
| `store.artifacts.list` | call | an app's: `after`? → `artifacts` (a page of its own), `next` |
| `store.artifacts.meta` | call | `artifact_id` → `artifact` (its row, or null) |
| `store.capabilities.load` | call | → open `requests`, `grants` (the capability gateway's state) |
| `store.capabilities.get` | call | `request_id` → `request` (its row, or null) |
| `store.capabilities.write` | call | a gateway step (request rows, grants, a revoke, audit) → |
| | | `revoked` |
| `store.app_data.overview` | call | the settings app's: → `apps` (each app's session data, |
| | | artifacts, diagnostics: counts and sizes), `retention` |

With `deliver` (the router's way) the store does what follows the commit itself: each
app's fresh messages (`app.deliver`), duplicates back to the router
(`router.inbound.duplicates`), the agent's tool calls and newly associated conversations to
the tool router (`tool_router.inbound`), `transport.outbox.wake`, `transport.persisted
{cursor}`.

A committed session-data replace is announced to the app's process after the commit
(`app.session_data.changed` {`instance_id`, `data`, `revision`}); `_session_data` has the rules.

`read_lifecycle`, `read_outbox`, `read_tool_calls`, `read_inventories`, `read_session_data`
and the others read the file directly (read-only), for the CLI.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ._actor import StoreActor
from ._apps import OPERATION_COLUMNS, load_apps, operation_from_row
from ._artifacts import artifact_rows
from ._capabilities import read_grants
from ._diagnostics import diagnostics_of
from ._schema import DB_FILE, open_db
from ._session_data import SUMMARY_COLUMNS, SessionDataLimits
from ._tools import CALL_COLUMNS, DEADLINE_COLUMNS, INVENTORY_COLUMNS, rows_of


def _read(data_dir: Path, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if not (Path(data_dir) / DB_FILE).exists():
        return []
    db = open_db(data_dir, readonly=True)
    try:
        return db.execute(query, params).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


def read_lifecycle(data_dir: Path) -> dict[str, Any] | None:
    """The last lifecycle state the transport reported, or None."""
    rows = _read(data_dir, "SELECT state, detail, at_ms FROM lifecycle WHERE name = 'runtime'")
    return {"state": rows[0][0], "detail": rows[0][1], "at_ms": rows[0][2]} if rows else None


def read_outbox(data_dir: Path) -> list[dict[str, Any]]:
    rows = _read(
        data_dir, "SELECT local_order, key, state, seq, code FROM outbox ORDER BY local_order"
    )
    return [dict(zip(("order", "key", "state", "seq", "code"), row, strict=True)) for row in rows]


def read_outbox_envelopes(data_dir: Path) -> list[dict[str, Any]]:
    """Every outbox item's envelope, in outbox order, with its state."""
    rows = _read(data_dir, "SELECT envelope, state FROM outbox ORDER BY local_order")
    return [{**json.loads(envelope), "_state": state} for envelope, state in rows]


def read_tool_calls(
    data_dir: Path, *, state: str | None = None, conversation_id: str | None = None
) -> list[dict[str, Any]]:
    """The tool calls, oldest first, each with its history (optionally of one state or
    conversation)."""
    query = f"SELECT {', '.join(CALL_COLUMNS)} FROM tool_calls WHERE 1"
    params: list[Any] = []
    if state is not None:
        query += " AND state = ?"
        params.append(state)
    if conversation_id is not None:
        query += " AND conversation_id = ?"
        params.append(conversation_id)
    return rows_of(
        CALL_COLUMNS, _read(data_dir, query + " ORDER BY created_ms, rowid", tuple(params))
    )


def read_tool_deadlines(data_dir: Path) -> dict[str, dict[str, Any]]:
    """The deadline operations of tool calls, by call id."""
    query = f"SELECT {', '.join(DEADLINE_COLUMNS)} FROM tool_deadlines"
    return {row["call_id"]: row for row in rows_of(DEADLINE_COLUMNS, _read(data_dir, query))}


def read_inventories(data_dir: Path) -> list[dict[str, Any]]:
    """The inventory each conversation was last given, with why each tool is or is not in it."""
    query = f"SELECT {', '.join(INVENTORY_COLUMNS)} FROM tool_inventories ORDER BY conversation_id"
    return rows_of(INVENTORY_COLUMNS, _read(data_dir, query))


def read_audit(data_dir: Path) -> list[dict[str, Any]]:
    rows = _read(data_dir, "SELECT code, detail, message_id, seq, source FROM audit ORDER BY pos")
    keys = ("code", "detail", "message_id", "seq", "source")
    return [dict(zip(keys, row, strict=True)) for row in rows]


__all__ = [
    "DB_FILE",
    "SessionDataLimits",
    "StoreActor",
    "open_db",
    "read_apps",
    "read_artifact",
    "read_artifacts",
    "read_audit",
    "read_diagnostics",
    "read_grants",
    "read_inventories",
    "read_lifecycle",
    "read_operation",
    "read_outbox",
    "read_outbox_envelopes",
    "read_session_data",
    "read_tool_calls",
    "read_tool_deadlines",
]


def read_session_data(data_dir: Path) -> list[dict[str, Any]]:
    """Each app instance's session data, without the data: `app_scope`, `instance_id`,
    `revision`, `size_bytes`, `updated_ms` (by scope and instance)."""
    query = (
        f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM app_session_data ORDER BY app_scope, instance_id"
    )
    return [dict(zip(SUMMARY_COLUMNS, row, strict=True)) for row in _read(data_dir, query)]


def read_diagnostics(data_dir: Path, recent: int = 5) -> dict[str, dict[str, Any]]:
    """What each app reported of itself, by app scope: `health`, `detail`, `health_at_ms`,
    `events_total` and its `recent` newest events (newest last)."""
    if not (Path(data_dir) / DB_FILE).exists():
        return {}
    db = open_db(data_dir, readonly=True)
    try:
        return diagnostics_of(db, recent)
    except sqlite3.OperationalError:  # a runtime.db from before diagnostics existed
        return {}
    finally:
        db.close()


def read_apps(data_dir: Path) -> dict[str, Any]:
    """The app registry as the app manager last wrote it (read-only, runtime up or not)."""
    if not (Path(data_dir) / DB_FILE).exists():
        return {"records": [], "operations": [], "instances": [], "settings": {}}
    db = open_db(data_dir, readonly=True)
    try:
        return load_apps(db)
    except sqlite3.OperationalError:  # a runtime.db from before the registry existed
        return {"records": [], "operations": [], "instances": [], "settings": {}}
    finally:
        db.close()


def read_operation(data_dir: Path, operation_id: str) -> dict[str, Any] | None:
    """One app operation's row (what `lineup app ...` follows to its end), or None."""
    rows = _read(
        data_dir,
        f"SELECT {', '.join(OPERATION_COLUMNS)} FROM app_operations WHERE operation_id = ?",
        (operation_id,),
    )
    return operation_from_row(rows[0]) if rows else None


def read_artifacts(data_dir: Path, *, conversation_id: str | None = None) -> list[dict[str, Any]]:
    """Every artifact's row, oldest first (optionally of one conversation)."""
    if conversation_id is None:
        return _artifact_rows(data_dir, "1", ())
    return _artifact_rows(data_dir, "conversation_id = ?", (conversation_id,))


def read_artifact(data_dir: Path, artifact_id: str) -> dict[str, Any] | None:
    """One artifact's row, or None."""
    rows = _artifact_rows(data_dir, "artifact_id = ?", (artifact_id,))
    return rows[0] if rows else None


def _artifact_rows(data_dir: Path, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    if not (Path(data_dir) / DB_FILE).exists():
        return []
    db = open_db(data_dir, readonly=True)
    try:
        return artifact_rows(db, where, params)
    except sqlite3.OperationalError:  # a runtime.db from before artifacts existed
        return []
    finally:
        db.close()
