"""What each app keeps in the runtime, in one answer for the settings app: per app scope,
its session data, its artifacts and what it said of itself, with the rule that says how
long they stay.

The store only reads here. Each part is a table another part of the store owns
(`_session_data`, `_artifacts`, `_diagnostics`); a table this runtime.db does not have yet
counts as empty, so the overview never fails because one kind of data is new. The apps are
the registry's records plus any scope that still has rows (a scope with rows and no record
is shown too: nothing is hidden because the registry forgot it).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

from actors.app_manager.registry import RegistryReader
from actors.kernel import Actor, Message, handles

from .door import Empty

# How long an app's data stays: the one statement of it, shown by the settings app and the
# CLI as the store gives it.
RETENTION: Final = (
    "Disabling an app keeps its session data, artifacts and diagnostics; removing it"
    " (`lineup app remove APP --yes`) deletes all three."
)


def _per_scope(
    db: sqlite3.Connection, query: str, names: tuple[str, ...]
) -> dict[str, dict[str, int]]:
    """`query`'s rows (a scope, then one number per name) by scope; none when its table
    is not there yet."""
    try:
        rows = db.execute(query).fetchall()
    except sqlite3.OperationalError:  # no such table: this kind of data is not kept yet
        return {}
    return {
        str(scope): {name: int(value or 0) for name, value in zip(names, values, strict=True)}
        for scope, *values in rows
    }


def _diagnostics(db: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    try:
        rows = db.execute(
            "SELECT app_scope, status, detail, at_ms, events_total FROM app_diagnostics"
        ).fetchall()
    except sqlite3.OperationalError:
        return {}
    return {
        str(scope): {
            "health": status,
            "detail": detail,
            "health_at_ms": at_ms,
            "events_total": int(total or 0),
        }
        for scope, status, detail, at_ms, total in rows
    }


def _registry(apps: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        str(r["app_scope"]): {"kind": r["kind"], "enabled": bool(r["enabled"])}
        for r in apps["records"]
    }


def app_data_overview(db: sqlite3.Connection, registered: dict[str, Any]) -> dict[str, Any]:
    """Each app's data: `apps` [{app_scope, kind, enabled, session_data {instances,
    revisions, bytes}, artifacts {count, bytes}, diagnostics {health, detail, health_at_ms,
    events_total} | null}] sorted by scope, and the `retention` rule."""
    session = _per_scope(
        db,
        "SELECT app_scope, count(*), sum(revision), sum(size_bytes) FROM app_session_data"
        " GROUP BY app_scope",
        ("instances", "revisions", "bytes"),
    )
    artifacts = _per_scope(
        db,
        "SELECT app_scope, count(*), sum(size) FROM artifacts GROUP BY app_scope",
        ("count", "bytes"),
    )
    diagnostics = _diagnostics(db)
    registry = _registry(registered)
    scopes = sorted({*registry, *session, *artifacts, *diagnostics})
    apps = [
        {
            "app_scope": scope,
            "kind": registry.get(scope, {}).get("kind"),
            "enabled": registry.get(scope, {}).get("enabled"),
            "session_data": session.get(scope, {"instances": 0, "revisions": 0, "bytes": 0}),
            "artifacts": artifacts.get(scope, {"count": 0, "bytes": 0}),
            "diagnostics": diagnostics.get(scope),
        }
        for scope in scopes
    ]
    return {"apps": apps, "retention": RETENTION}


class OverviewTables(Actor):
    """The store's handler for the settings app's view of each app's data (mixed into
    `StoreActor`)."""

    db: sqlite3.Connection
    registry: RegistryReader

    @handles("store.app_data.overview")
    async def data_overview(self, msg: Message[Empty]) -> Any:
        """Body {}; reply `app_data_overview`'s. A read: nothing is written or recorded."""
        return app_data_overview(self.db, self.registry.apps())
