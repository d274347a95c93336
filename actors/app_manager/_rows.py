"""The app registry's rows as `app_manager.db` holds them: columns, and each row as a dict.

Kept apart from the actor, which needs the kernel, so that the command line reads the
registry and follows an operation without importing trio or the contracts.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any, Final

RECORD_COLUMNS: Final = (
    "app_scope",
    "kind",
    "name",
    "installed_version",
    "previous_version",
    "enabled",
    "install_state",
    "active_instance_count",
    "installed_at_ms",
    "enabled_at_ms",
    "bundle_digest",
    "previous_digest",
    "manifest",
)
OPERATION_COLUMNS: Final = (
    "operation_id",
    "kind",
    "app_scope",
    "state",
    "step",
    "progress",
    "code",
    "detail",
    "request",
    "created_ms",
    "updated_ms",
)
INSTANCE_COLUMNS: Final = (
    "instance_id",
    "app_scope",
    "conversation_id",
    "state",
    "mode",
    "created_ms",
    "updated_ms",
)
# The states in which an instance is live: it has (or is getting) its app's process.
LIVE_STATES: Final = frozenset({"launching", "active", "backgrounded", "suspended", "restoring"})
# Whole-value JSON columns: the manifest, an operation's request.
_JSON_COLUMNS: Final = frozenset({"manifest", "request"})


def row_values(columns: tuple[str, ...], row: dict[str, Any]) -> tuple[Any, ...]:
    values = []
    for column in columns:
        value = row.get(column)
        if column in _JSON_COLUMNS and value is not None:
            value = json.dumps(value, separators=(",", ":"), sort_keys=True)
        elif isinstance(value, bool):
            value = int(value)
        values.append(value)
    return tuple(values)


def as_dicts(columns: tuple[str, ...], rows: Iterable[tuple[Any, ...]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        item = dict(zip(columns, row, strict=True))
        for column in _JSON_COLUMNS & item.keys():
            if item[column] is not None:
                item[column] = json.loads(item[column])
        if "enabled" in item:
            item["enabled"] = bool(item["enabled"])
        out.append(item)
    return out


def operation_from_row(row: tuple[Any, ...]) -> dict[str, Any]:
    return as_dicts(OPERATION_COLUMNS, [row])[0]


def load_apps(
    db: sqlite3.Connection, *, operations: int | None = None, ended: bool = True
) -> dict[str, Any]:
    """Everything the app manager rebuilds its state from; for a reader that shows the
    registry, with `operations` only the newest that many (but listings) and without
    `ended` only the live instances."""
    records = db.execute(f"SELECT {', '.join(RECORD_COLUMNS)} FROM app_records ORDER BY app_scope")
    columns = ", ".join(OPERATION_COLUMNS)
    if operations is None:
        rows = db.execute(f"SELECT {columns} FROM app_operations ORDER BY created_ms, rowid")
    else:
        rows = db.execute(
            f"SELECT {columns} FROM (SELECT {columns}, rowid AS r FROM app_operations"
            " WHERE kind != 'list' ORDER BY created_ms DESC, rowid DESC LIMIT ?)"
            " ORDER BY created_ms, r",
            (operations,),
        )
    live = "" if ended else f" WHERE state IN ({', '.join(repr(s) for s in sorted(LIVE_STATES))})"
    instances = db.execute(
        f"SELECT {', '.join(INSTANCE_COLUMNS)} FROM app_instances{live} ORDER BY created_ms, rowid"
    )
    settings = db.execute("SELECT name, value FROM app_settings")
    return {
        "records": as_dicts(RECORD_COLUMNS, records),
        "operations": as_dicts(OPERATION_COLUMNS, rows),
        "instances": as_dicts(INSTANCE_COLUMNS, instances),
        "settings": {name: json.loads(value) for name, value in settings},
    }
