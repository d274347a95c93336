"""`sdk.diagnostics`: what an app says of its own health, and its structured log events.

Both go to the store, which files them under the app's own name (the one the supervisor
stamps on its messages), keeps the latest health and the newest events, and shows them to
the operator (`lineup debug actors --stats`). They survive the app's crash: the last word
an app said before it failed is the one worth reading. The checks here are the store
door's, made early so an honest app gets a clear error instead of a silent refusal.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ._app_core import AppCore

STORE: Final = "store"
STATUSES: Final = ("ok", "degraded", "failing")
LEVELS: Final = ("debug", "info", "warning", "error")
DETAIL_MAX: Final = 300
NAME_MAX: Final = 64
FIELDS_MAX_BYTES: Final = 2048


class DiagnosticsAPI:
    def __init__(self, app: AppCore) -> None:
        self._app = app

    async def health(self, status: str, detail: str = "") -> None:
        """The app's health now: `ok`, `degraded` or `failing`, with a short detail."""
        if status not in STATUSES:
            raise ValueError(f"health is one of {', '.join(STATUSES)}, not {status!r}")
        if len(detail) > DETAIL_MAX:
            raise ValueError(f"a health detail has at most {DETAIL_MAX} characters")
        await self._report({"health": {"status": status, "detail": detail}})

    async def event(self, level: str, name: str, fields: dict[str, Any] | None = None) -> None:
        """One structured log event: a level, a short name and JSON fields."""
        if level not in LEVELS:
            raise ValueError(f"an event's level is one of {', '.join(LEVELS)}, not {level!r}")
        if not 1 <= len(name) <= NAME_MAX:
            raise ValueError(f"an event's name has 1 to {NAME_MAX} characters")
        encoded = json.dumps(fields or {}, separators=(",", ":"))
        if len(encoded.encode()) > FIELDS_MAX_BYTES:
            raise ValueError(f"an event's fields take at most {FIELDS_MAX_BYTES} bytes as JSON")
        await self._report({"events": [{"level": level, "name": name, "fields": fields or {}}]})

    async def _report(self, body: dict[str, Any]) -> None:
        app = self._app
        await app.cast(STORE, "store.diagnostics.report", body, id=app._ids.next())
