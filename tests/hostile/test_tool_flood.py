"""One app costs the shared tool router all the work its input can, beside another app
whose calls the agent makes: report bodies near the largest a message may have, as fast
as its channel takes them, and calls of a tool whose output costs its schema's check more
than the runtime spends on one. What it may put on the tool router's queue is bounded in
bytes a second and refused past that with `rate_limited`, counted against it; a costly
check ends in bounded time with `handler_failed`; the other app's calls take at most
twice their quiet time, the tool router answers its heartbeat and is never restarted."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.runtime.helpers import CONVERSATION, Stack, runtime_config, wait_for
from tests.tools.conftest import toolbox  # noqa: F401 - the signed toolbox bundle

from .app._flood_attacks import ENOUGH
from .conftest import Hostile
from .test_tools import _ready

PROBES = 15
# The most a flood may last: far longer than the probes and the costly calls take together,
# which end it (the order `enough`) once they are measured.
FLOOD_S = 60.0
# A floor under "twice the quiet latency": the suite runs two test files at once on two
# cores, so a probe can wait for the other file's processes whatever this flood does. A
# call's quiet p50 here is ≈15-30 ms; 40 ms is about one scheduler time slice of each of
# the other file's busy processes, far below what the unbounded flood cost a call (6.2 s).
FLOOR_S = 0.040


async def _echo(stack: Stack, text: str) -> float:
    """Seconds of one call of the toolbox's `box.echo`, as the agent sees it."""
    assert stack.agent is not None
    started = time.monotonic()
    call = stack.agent.call(CONVERSATION, "box.echo", {"value": text}, app_scope="toolbox")
    final = await call.outcome()
    assert final.type == "lineup.tool.result", final
    return time.monotonic() - started


async def _median(stack: Stack, label: str) -> float:
    return statistics.median([await _echo(stack, f"{label} {n}") for n in range(PROBES)])


async def _costly(stack: Stack, n: int) -> float:
    """Seconds of one call of `hostile.costly`, which ends `handler_failed`."""
    assert stack.agent is not None
    started = time.monotonic()
    call = stack.agent.call(CONVERSATION, "hostile.costly", {}, call_id=f"call_costly_{n}")
    final = await call.outcome()
    assert final.type == "lineup.tool.error", final
    assert final.payload().code == "handler_failed", final.payload()
    return time.monotonic() - started


def _stored(hostile: Hostile) -> tuple[int, int, int]:
    """Bytes of the app's messages stored for the tool router; when the first and the
    last were stored (ms)."""
    rows = hostile.mailbox_rows(
        "SELECT sum(length(frame)), min(created_ms), max(created_ms) FROM messages"
        " WHERE sender = 'app.hostile' AND recipient = 'tool_router'"
    )
    stored, first_ms, last_ms = rows[0]
    return stored or 0, first_ms or 0, last_ms or 0


def _tools(stack: Stack) -> list[str]:
    assert stack.agent is not None
    inventory = stack.agent.inventory(CONVERSATION)
    return [tool.method for tool in inventory.tools] if inventory is not None else []


@dataclass
class Flooded:
    quiet: float  # box.echo's p50 without the flood, s
    busy: float  # and with it
    costly: list[float]  # each hostile.costly call during the flood, s
    flood: dict[str, Any]  # what the attack reported


async def _flooded(
    hostile: Hostile, box: tuple[Path, Path], attack: str, options: dict[str, Any]
) -> Flooded:
    """The toolbox's calls timed without and with the hostile app's `attack`, and calls of
    its costly tool made during it; every core actor answered its heartbeat throughout,
    and none was restarted."""
    stack = hostile.stack
    await _ready(hostile, box, {"attacks": [attack], attack: options})
    runtime = stack.runtime
    assert runtime is not None
    await wait_for(
        lambda: {"box.echo", "hostile.costly"} <= set(_tools(stack)), 30, "the agent's tools"
    )
    for n in range(3):  # the first launches the toolbox
        await _echo(stack, f"warm {n}")
    quiet = await _median(stack, "quiet")
    restarts = hostile.restarts()

    await hostile.launch()  # its flood begins as it starts
    await wait_for(lambda: _stored(hostile)[0], 30, "the flood")
    busy, costly = [], []
    for n in range(PROBES):
        busy.append(await _echo(stack, f"busy {n}"))
        if n % 3 == 0:
            costly.append(await _costly(stack, n))
    assert not (hostile.report() or {}).get("done"), "the flood ended before it was measured"
    hostile.order(ENOUGH, {})
    flood = (await hostile.wait_report(60))["results"][attack]

    # Quiet is the slower of a measure before and one after the flood, so that other load
    # on the machine at either time is not counted as the flood's.
    quiet = max(quiet, await _median(stack, "after"))
    measured = Flooded(quiet, statistics.median(busy), costly, flood)
    print(f"{attack}: {measured}")
    assert measured.busy <= max(2 * quiet, quiet + FLOOR_S), measured
    events = runtime.control({"type": "lifecycle"})["events"]
    assert not [e for e in events if e["event"] == "unresponsive"], events
    assert {name: hostile.restarts()[name] for name in restarts} == restarts
    return measured


async def test_big_reports_at_its_pace_leave_another_apps_calls_theirs(
    hostile: Hostile,
    toolbox: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    # Its allowed pace: three quarters of its budget, leaving room for its own results.
    budget = runtime_config(hostile.data_dir, "ws://unused")["app_limits"]
    pace = {"seconds": FLOOD_S, "bytes_per_s": 0.75 * budget["recipient_bytes_rate"]}
    measured = await _flooded(hostile, toolbox, "big_reports", pace)
    # A check past its budget ends the call at once: the app's own work (building and
    # packing 60,000 values) is most of what is left.
    assert max(measured.costly) < 5.0, measured.costly
    flood = measured.flood

    # Past its pace, a burst was taken and then a report refused with the code, counted
    # against it and never stored: what was stored for the tool router is what its budget
    # allows.
    assert flood["last"].startswith("refused:rate_limited"), flood
    runtime = hostile.stack.runtime
    assert runtime is not None
    assert runtime.actors()["app.hostile"]["refused"] == {"rate_limited": 1}
    limits = runtime.config["app_limits"]
    stored, first_ms, last_ms = _stored(hostile)
    allowed = (
        limits["recipient_bytes_burst"]
        + (last_ms - first_ms) / 1000 * limits["recipient_bytes_rate"]
    )
    assert stored <= allowed * 1.01, (stored, allowed)  # a frame is a little over its body


async def test_small_reports_at_its_pace_leave_another_apps_calls_theirs(
    hostile: Hostile,
    toolbox: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    """As many reports as its pace in messages lets through while the calls are timed."""
    rate = runtime_config(hostile.data_dir, "ws://unused")["app_limits"]["rate"]
    measured = await _flooded(hostile, toolbox, "flood_reports", {"count": FLOOD_S * rate})
    assert measured.flood["last"] == "accepted:null", measured.flood
    # Its costly calls end as any check past its budget does, once its result has waited
    # behind the reports it sent first: its own backlog (its credits, its pace), charged
    # to it alone. Well within the tool's 30 s, after which the call would expire instead.
    assert max(measured.costly) < 15.0, measured.costly
