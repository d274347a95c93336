"""The hostile app's attacks on diagnostics: it reports for another app, past the limits and
past the SDK, and floods its own events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import HostileApp

STOLEN_DETAIL = "I am the chat app, and I am failing"
EVENTS_FLOOD = 150


def _events(count: int) -> list[dict[str, Any]]:
    return [{"level": "info", "name": f"e{n}"} for n in range(count)]


async def speak_for_others(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Reports past the SDK: as another app, with a body the door does not take, and too
    large; then through the SDK: its own health, worded as another app's, and a flood of
    events."""
    report = "store.diagnostics.report"
    bodies: dict[str, Any] = {
        "as chat": {"app_scope": "chat", "health": {"status": "failing"}},
        "sender in the body": {"sender": "app.chat", "events": _events(1)},
        "too many at once": {"events": _events(21)},
        "unknown level": {"events": [{"level": "critical", "name": "x"}]},
        "unknown health": {"health": {"status": "dead"}},
        "fields too large": {
            "events": [{"level": "info", "name": "x", "fields": {"x": "y" * 3000}}]
        },
        "name too long": {"events": [{"level": "info", "name": "n" * 65}]},
    }
    outcomes = {label: await app.attempt("store", report, body) for label, body in bodies.items()}
    try:
        await app.sdk.diagnostics.health("dead")
        outcomes["sdk: unknown health"] = "accepted"
    except ValueError as exc:
        outcomes["sdk: unknown health"] = f"raised:{exc}"
    await app.sdk.diagnostics.health("degraded", STOLEN_DETAIL)
    for n in range(EVENTS_FLOOD):
        await app.sdk.diagnostics.event("warning", "flood", {"n": n})
    outcomes["last"] = await app.attempt("store", report, {"events": _events(1)})
    return {"outcomes": outcomes}
