"""The tool router's reads for the command line (`lineup tools`, `lineup debug why`, the
bench): `tool_router.db` opened read-only, with the runtime up or stopped."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from actors.kernel import read_file

from ._db import (
    CALL_COLUMNS,
    DEADLINE_COLUMNS,
    INVENTORY_COLUMNS,
    db_path,
    rows_of,
)

T = TypeVar("T")


def _reading(data_dir: Path, read: Callable[[sqlite3.Connection], T], empty: T) -> T:
    """What `read` finds in `tool_router.db`; `empty` where there is none yet."""
    return read_file(db_path(data_dir), read, empty)


def _read(data_dir: Path, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return _reading(data_dir, lambda db: db.execute(query, params).fetchall(), [])


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


def read_tool_calls_about(data_dir: Path, message_id: str) -> list[dict[str, Any]]:
    """The calls whose own envelope, or whose id, is `message_id` (`lineup debug why`)."""
    query = (
        "SELECT call_id, envelope_id, app_scope, method, state, code, detail FROM tool_calls"
        " WHERE envelope_id = ? OR call_id = ?"
    )
    keys = ("call_id", "envelope_id", "app_scope", "method", "state", "code", "detail")
    rows = _read(data_dir, query, (message_id, message_id))
    return [dict(zip(keys, row, strict=True)) for row in rows]


def read_tool_deadlines(data_dir: Path) -> dict[str, dict[str, Any]]:
    """The deadline operations of tool calls, by call id."""
    query = f"SELECT {', '.join(DEADLINE_COLUMNS)} FROM tool_deadlines"
    return {row["call_id"]: row for row in rows_of(DEADLINE_COLUMNS, _read(data_dir, query))}


def read_inventories(data_dir: Path) -> list[dict[str, Any]]:
    """The inventory each conversation was last given, with why each tool is or is not in it."""
    query = f"SELECT {', '.join(INVENTORY_COLUMNS)} FROM tool_inventories ORDER BY conversation_id"
    return rows_of(INVENTORY_COLUMNS, _read(data_dir, query))
