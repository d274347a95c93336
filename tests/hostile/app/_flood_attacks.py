"""The hostile app costs the shared actors all the work its input can: reports on calls
that never existed, each with a body near the largest a message may have, as fast as its
channel takes them; and a tool whose output schema costs the most a check may spend."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from actors.kernel import new_id

if TYPE_CHECKING:
    from ._app import HostileApp

TOOL_ROUTER = "tool_router"
REPORT = "tool_router.report"
BIG = 250_000  # bytes of text in one report: a packed body may have 256 KiB
MORE = 100  # reports past its pace: 25 MB, far over any burst it may have
ENOUGH = "enough"  # the order that ends a flood once the test has measured it

# Within every limit a descriptor is held to, yet each item of a large value costs ≈ 30
# keywords: a check of `COSTLY_ITEMS` of them is ≈ ten times the budget of one.
_ITEM_CHECKS = [{"type": "object", "required": ["k"], "minProperties": 1} for _ in range(30)]
COSTLY_SCHEMA = {
    "type": "object",
    "properties": {"xs": {"type": "array", "items": {"allOf": _ITEM_CHECKS}}},
}
COSTLY_ITEMS = 20_000  # three values each: within a body's 65,536


def costly_output() -> dict[str, Any]:
    return {"xs": [{"k": 1}] * COSTLY_ITEMS}


async def big_reports(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Big reports at `bytes_per_s` (its allowed pace) for `seconds` at most, until the test
    orders `ENOUGH`; then as fast as the channel takes them, as calls, until one is refused
    (at most `MORE`)."""
    seconds = float(options.get("seconds", 20))
    interval = BIG / float(options["bytes_per_s"])
    body = {"call_id": "call_ghost_big", "kind": "result", "output": {"blob": "x" * BIG}}
    sent = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds and not app.told(ENOUGH):
        await app.cast(TOOL_ROUTER, REPORT, body, id=new_id())
        sent += 1
        await app.pause(max(0.0, started + sent * interval - time.monotonic()))
    taken = 0
    last = ""
    while taken < MORE and not last.startswith("refused"):
        last = await app.attempt(TOOL_ROUTER, REPORT, body)
        taken += last.startswith("accepted")
    return {
        "sent": sent,
        "seconds": round(time.monotonic() - started, 3),
        "taken": taken,
        "last": last,
    }
