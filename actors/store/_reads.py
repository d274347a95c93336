"""The store's reads for the command line and the web host: `runtime.db` opened read-only,
runtime up or not. What shares its row formats with the store's handlers (and so imports
the kernel) is imported only when its reader runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

from actors.kernel import KeptReader, read_file

from ._file import DB_FILE

T = TypeVar("T")


def _reading(data_dir: Path, read: Callable[[sqlite3.Connection], T], empty: T) -> T:
    """What `read` finds in `runtime.db`; `empty` where there is none, or it is older than
    the tables read."""
    return read_file(Path(data_dir) / DB_FILE, read, empty)


def _read(data_dir: Path, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return _reading(data_dir, lambda db: db.execute(query, params).fetchall(), [])


_LIFECYCLE: Final = "SELECT state, detail, at_ms FROM lifecycle WHERE name = 'runtime'"


def _lifecycle_of(rows: list[tuple[Any, ...]]) -> dict[str, Any] | None:
    return {"state": rows[0][0], "detail": rows[0][1], "at_ms": rows[0][2]} if rows else None


def read_lifecycle(data_dir: Path) -> dict[str, Any] | None:
    """The last lifecycle state the transport reported, or None."""
    return _lifecycle_of(_read(data_dir, _LIFECYCLE))


def read_outbox(data_dir: Path) -> list[dict[str, Any]]:
    rows = _read(
        data_dir, "SELECT local_order, key, state, seq, code FROM outbox ORDER BY local_order"
    )
    return [dict(zip(("order", "key", "state", "seq", "code"), row, strict=True)) for row in rows]


def read_outbox_envelopes(data_dir: Path) -> list[dict[str, Any]]:
    """Every outbox item's envelope, in outbox order, with its state."""
    rows = _read(data_dir, "SELECT envelope, state FROM outbox ORDER BY local_order")
    return [{**json.loads(envelope), "_state": state} for envelope, state in rows]


def read_audit(data_dir: Path) -> list[dict[str, Any]]:
    """Every audit row, oldest first; `repeats`: how many of the same routine action it
    stands for (`_upkeep.write_audit`)."""
    rows = _read(
        data_dir,
        "SELECT code, detail, message_id, seq, source, coalesce(repeats, 1) FROM audit"
        " ORDER BY pos",
    )
    keys = ("code", "detail", "message_id", "seq", "source", "repeats")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def read_session_data(data_dir: Path) -> list[dict[str, Any]]:
    """Each app instance's session data, without the data: `app_scope`, `instance_id`,
    `revision`, `size_bytes`, `updated_ms` (by scope and instance)."""
    from ._session_data import SUMMARY_COLUMNS

    query = (
        f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM app_session_data ORDER BY app_scope, instance_id"
    )
    return [dict(zip(SUMMARY_COLUMNS, row, strict=True)) for row in _read(data_dir, query)]


def read_diagnostics(data_dir: Path, recent: int = 5) -> dict[str, dict[str, Any]]:
    """What each app reported of itself, by app scope: `health`, `detail`, `health_at_ms`,
    `events_total` and its `recent` newest events (newest last)."""
    from ._diagnostics import diagnostics_of

    return _reading(data_dir, lambda db: diagnostics_of(db, recent), {})


class RuntimeReader(KeptReader):
    """`runtime.db` kept open read-only (`KeptReader`), for the web host's page sockets,
    which read the link's state again and again."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(Path(data_dir) / DB_FILE)

    def lifecycle(self) -> dict[str, Any] | None:
        """As `read_lifecycle`."""
        db = self._open()
        try:
            return _lifecycle_of(db.execute(_LIFECYCLE).fetchall()) if db is not None else None
        except sqlite3.OperationalError:
            return None


def read_artifacts(data_dir: Path, *, conversation_id: str | None = None) -> list[dict[str, Any]]:
    """Every artifact's row, oldest first (optionally of one conversation)."""
    if conversation_id is None:
        return _artifact_rows(data_dir, "1", ())
    return _artifact_rows(data_dir, "conversation_id = ?", (conversation_id,))


def read_artifact(data_dir: Path, artifact_id: str) -> dict[str, Any] | None:
    """One artifact's row, or None."""
    rows = _artifact_rows(data_dir, "artifact_id = ?", (artifact_id,))
    return rows[0] if rows else None


def read_artifact_data(data_dir: Path, artifact_id: str) -> tuple[dict[str, Any], bytes] | None:
    """One artifact's row and its bytes, or None: for an id that is not an artifact id,
    names no row, or whose file is not the whole of what the row records (its size and
    sha256). The file is opened without following a symbolic link, and read no further
    than the row's size and one byte more."""
    from ._artifacts import ARTIFACTS_DIR, is_artifact_id

    if not is_artifact_id(artifact_id):
        return None
    row = read_artifact(data_dir, artifact_id)
    if row is None:
        return None
    try:
        fd = os.open(Path(data_dir) / ARTIFACTS_DIR / artifact_id, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as content:
        data = content.read(int(row["size"]) + 1)
    if len(data) != row["size"] or hashlib.sha256(data).hexdigest() != row["sha256"]:
        return None
    return row, data


def _artifact_rows(data_dir: Path, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    from ._artifacts import artifact_rows

    return _reading(data_dir, lambda db: artifact_rows(db, where, params), [])
