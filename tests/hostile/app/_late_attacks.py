"""The hostile app against a call's bounded life: its tool `hostile.silent` never answers,
and once the runtime has ended the call `operation_expired` the app answers it anyway, past
the SDK, every way a report can (a result, an error, progress, a deadline)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import HostileApp

SILENT_TIMEOUT_MS = 1000  # the short life `hostile.silent` declares


async def answer_late(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Reports on its own ended call (its id given by the test once it expired)."""
    late = str((await app.order("answer_late"))["call"])
    reports = {
        "result": {"call_id": late, "kind": "result", "output": {"n": 1}},
        "error": {"call_id": late, "kind": "error", "code": "handler_failed"},
        "progress": {"call_id": late, "kind": "progress", "percent": 50},
        "deadline": {"call_id": late, "kind": "deadline", "duration_ms": 1000, "display": {}},
    }
    replies = {
        label: await app.attempt("tool_router", "tool_router.report", body)
        for label, body in reports.items()
    }
    return {"replies": replies}
