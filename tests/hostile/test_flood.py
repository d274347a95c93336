"""The hostile app floods the runtime: casts the door refuses, to names that do not exist,
and casts it lets through. The mailbox and the supervisor's memory stay bounded, and the
agent's messages still reach the chat within three times the quiet latency."""

from __future__ import annotations

import statistics
import time

import trio

from tests.runtime.helpers import CONVERSATION, Stack, texts, wait_for

from .app._flood_attacks import ENOUGH
from .conftest import Hostile

FLOOD = 200_000


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


async def _latencies(stack: Stack, label: str, count: int = 20) -> list[float]:
    """Seconds from the agent's send to the chat's timeline, one message at a time."""
    assert stack.agent is not None
    seconds = []
    for n in range(count):
        text = f"{label} {n}"
        started = time.monotonic()
        await stack.agent.send_text(CONVERSATION, text)
        deadline = started + 30
        while text not in texts(stack.timeline()):
            assert time.monotonic() < deadline, f"{text!r} never reached the chat"
            await trio.sleep(0.002)
        seconds.append(time.monotonic() - started)
    return seconds


async def test_a_flood_is_bounded_and_the_agent_still_gets_through(hostile: Hostile) -> None:
    await _flood(hostile, refused_per_allowed=100, count=FLOOD)


async def test_a_flood_the_door_lets_through_is_paced(hostile: Hostile) -> None:
    """Every cast allowed (an action the router refuses and answers): its pace and its
    sending credits keep the agent's path clear. Its flood (20,000 casts at most, ten
    seconds at its pace) ends once the agent's messages are timed."""
    await _flood(hostile, refused_per_allowed=0, count=20_000, ended_once_timed=True)


async def _flood(
    hostile: Hostile, *, refused_per_allowed: int, count: int, ended_once_timed: bool = False
) -> None:
    stack = hostile.stack
    await stack.start_appserver()
    runtime = await stack.start_runtime()
    await stack.start_agent()
    await _latencies(stack, "warm", 5)
    quiet = statistics.median(await _latencies(stack, "quiet"))
    assert runtime.process is not None
    supervisor_rss = _rss_mib(runtime.process.pid)
    mailbox = hostile.data_dir / "mailbox.db"
    mailbox_bytes = mailbox.stat().st_size + (hostile.data_dir / "mailbox.db-wal").stat().st_size

    options = {"count": count, "refused_per_allowed": refused_per_allowed}
    await hostile.install({"attacks": ["flood"], "flood": options})
    await hostile.launch()

    def flooding() -> bool:
        refused = runtime.actors()["app.hostile"]["refused"]
        stored = hostile.mailbox_rows("SELECT count(*) FROM messages WHERE sender = 'app.hostile'")
        return bool(refused) or stored[0][0] > 100

    await wait_for(flooding, 30, "the flood")
    busy = statistics.median(await _latencies(stack, "busy"))
    assert not (hostile.report() or {}).get("done"), "the flood ended before it was measured"
    if ended_once_timed:
        hostile.order(ENOUGH, {})
    report = await hostile.wait_report(120)
    sent = report["results"]["flood"]
    if not ended_once_timed:
        assert sent["refused"] + sent["nobody"] + sent["allowed"] >= count
    everything = sent["refused"] + sent["nobody"]

    def all_refused() -> bool:  # the last casts may still be in its channel
        refused = runtime.actors()["app.hostile"]["refused"]
        return refused.get("sender_not_allowed", 0) >= everything

    await wait_for(all_refused, 30, "every refused cast counted")
    # Quiet is the slower of a measure before and one after the flood, so that other load
    # on the machine at either time is not counted as the flood's. The suite runs three
    # test files at once, whose load lands on either measure: a flood may cost the agent up
    # to three times its quiet latency.
    quiet = max(quiet, statistics.median(await _latencies(stack, "after")))
    print(f"agent → chat p50: quiet {quiet * 1000:.1f} ms, flooded {busy * 1000:.1f} ms")
    assert busy <= 3 * quiet, f"busy {busy * 1000:.1f} ms, quiet {quiet * 1000:.1f} ms"
    expected = {"sender_not_allowed": everything} if everything else {}
    assert runtime.actors()["app.hostile"]["refused"] == expected
    # Nothing refused was stored; what was let through was handled, not left waiting.
    stored = hostile.mailbox_rows("SELECT count(*) FROM messages WHERE sender = 'app.hostile'")
    assert stored[0][0] <= sent["allowed"] + 10
    grown = (
        mailbox.stat().st_size + (hostile.data_dir / "mailbox.db-wal").stat().st_size
    ) - mailbox_bytes
    assert grown < 32 * 1024 * 1024, f"mailbox.db grew by {grown} bytes"
    assert _rss_mib(runtime.process.pid) - supervisor_rss < 40
