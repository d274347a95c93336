"""What apps report of themselves: their health and their structured log events.

An app reports only as itself: the row's `app_scope` is the sender the supervisor stamped on
the message, never a field of the body, so no app can write or hide another's diagnostics.
The store keeps each app's latest health and its last `EVENTS_KEPT` events; what an app
reports is its own word about itself and is shown as such, never acted on. The app's pace
(the supervisor's token bucket) bounds how fast it can write.

`sdk.diagnostics.health(status, detail)` (`ok`, `degraded` or `failing`) and
`event(level, name, fields)` (`debug` to `error`, a name of at most 64 characters, fields
of at most 2 KiB as JSON) are each a cast of `store.diagnostics.report`:

| table | key | content |
|---|---|---|
| `app_diagnostics` | `app_scope` | the latest `status` and `detail`, their time, `events_total` |
| `app_diagnostic_events` | `pos` | `app_scope`, `at_ms`, `level`, `name`, `fields` |

The door refuses a report with more than 20 events, an unknown level or health, or a name
or detail past its length; the store refuses fields past 2 KiB (`too_large`) and keeps
each app's newest 100 events. They are shown as the app's own words (`lineup debug actors
--stats`: "app.x says: ...", each event a line, control characters escaped; `--json` adds
`diagnostics` to each app's record). The rows outlive the app's process and go with the
app when the user removes it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from actors.kernel import Actor, Message, handles
from contracts import Code, ContractError

from .door import DiagnosticsReport

APP_PREFIX: Final = "app."  # the supervisor names every app process so
EVENTS_KEPT: Final = 100  # per app, the newest
FIELDS_MAX_BYTES: Final = 2048  # one event's fields, as JSON


def _now_ms() -> int:
    return int(time.time() * 1000)


def write_report(
    db: sqlite3.Connection, app_scope: str, report: Mapping[str, Any], now_ms: int
) -> None:
    """One report of `app_scope`: its health replaced, its events appended and trimmed."""
    events = list(report.get("events", ()))
    health = report.get("health")
    for event in events:
        fields = json.dumps(event.get("fields") or {}, separators=(",", ":"))
        if len(fields.encode()) > FIELDS_MAX_BYTES:
            raise ContractError(
                Code.TOO_LARGE, f"an event's fields take over {FIELDS_MAX_BYTES} bytes"
            )
        db.execute(
            "INSERT INTO app_diagnostic_events (app_scope, at_ms, level, name, fields)"
            " VALUES (?, ?, ?, ?, ?)",
            (app_scope, now_ms, event["level"], event["name"], fields),
        )
    db.execute(
        "INSERT INTO app_diagnostics (app_scope, status, detail, at_ms, events_total)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(app_scope) DO UPDATE SET"
        " status = coalesce(excluded.status, status),"
        " detail = coalesce(excluded.detail, detail),"
        " at_ms = coalesce(excluded.at_ms, at_ms),"
        " events_total = events_total + excluded.events_total",
        (
            app_scope,
            health["status"] if health else None,
            health.get("detail", "") if health else None,
            now_ms if health else None,
            len(events),
        ),
    )
    if events:
        db.execute(
            "DELETE FROM app_diagnostic_events WHERE app_scope = ? AND pos <= ("
            " SELECT pos FROM app_diagnostic_events WHERE app_scope = ?"
            " ORDER BY pos DESC LIMIT 1 OFFSET ?)",
            (app_scope, app_scope, EVENTS_KEPT),
        )


def forget_diagnostics(db: sqlite3.Connection, app_scope: str) -> None:
    """A removed app's diagnostics go with it."""
    db.execute("DELETE FROM app_diagnostics WHERE app_scope = ?", (app_scope,))
    db.execute("DELETE FROM app_diagnostic_events WHERE app_scope = ?", (app_scope,))


def diagnostics_of(db: sqlite3.Connection, recent: int = 5) -> dict[str, dict[str, Any]]:
    """Each app's health and its `recent` newest events, newest last, by app scope."""
    out: dict[str, dict[str, Any]] = {}
    for scope, status, detail, at_ms, total in db.execute(
        "SELECT app_scope, status, detail, at_ms, events_total FROM app_diagnostics"
        " ORDER BY app_scope"
    ):
        rows = db.execute(
            "SELECT at_ms, level, name, fields FROM app_diagnostic_events WHERE app_scope = ?"
            " ORDER BY pos DESC LIMIT ?",
            (scope, recent),
        ).fetchall()
        out[scope] = {
            "health": status,
            "detail": detail,
            "health_at_ms": at_ms,
            "events_total": total,
            "recent": [
                {"at_ms": at, "level": level, "name": name, "fields": json.loads(fields)}
                for at, level, name, fields in reversed(rows)
            ],
        }
    return out


class DiagnosticsTables(Actor):
    """The store's handler for what apps report of themselves (mixed into `StoreActor`)."""

    db: sqlite3.Connection
    _once: Callable[[Message, Callable[[], Any]], Any]

    @handles("store.diagnostics.report")
    async def diagnostics_report(self, msg: Message[DiagnosticsReport]) -> None:
        """Body: `health` {status, detail} and/or `events` [{level, name, fields}]."""
        if not msg.sender.startswith(APP_PREFIX):  # the door admits apps only
            raise ContractError(Code.SENDER_NOT_ALLOWED, "only an app reports diagnostics")
        scope = msg.sender.removeprefix(APP_PREFIX)
        self._once(msg, lambda: write_report(self.db, scope, msg.body, _now_ms()))
