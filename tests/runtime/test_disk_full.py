"""The data dir's disk runs full under a live runtime: it says it is degraded and why, keeps
running, loses nothing it accepted, and goes on by itself once there is room again.

The data dir is a small tmpfs (mounting one needs root, as CI runs); a ballast file fills it
to the last byte while the agent keeps sending."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from actors.kernel import ControlError
from tests.small_disk import fill
from tests.small_disk import small_disk as on_small_disk

from .helpers import Stack, texts, wait_for

SIZE_MIB = 64
MESSAGES = 20


@pytest.fixture
def small_disk(stack: Stack) -> Iterator[Path]:
    """`stack`'s data dir on a tmpfs of its own."""
    with on_small_disk(stack.data_dir, SIZE_MIB) as data_dir:
        yield data_dir


def status(stack: Stack) -> dict[str, object]:
    try:
        return stack.control({"type": "status"})
    except ControlError:
        return {}


async def test_full_disk_degrades_then_recovers_without_loss(stack: Stack, small_disk: Path):
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    await agent.send_text("conv-1", "before")
    await wait_for(lambda: "before" in texts(stack.timeline("conv-1")), 30, "the first message")

    ballast = small_disk / "ballast"
    await trio.to_thread.run_sync(fill, ballast)
    assert os.statvfs(small_disk).f_bavail < 16, "the ballast left room"
    for n in range(MESSAGES):  # accepted by the AppServer, waiting for the runtime
        await agent.send_text("conv-1", f"while full {n}")

    def full() -> dict[str, object] | None:
        found = status(stack)
        return found if found.get("state") == "degraded" else None

    degraded = await wait_for(full, 30, "the runtime to say it is degraded")
    assert "the data dir's disk is full" in str(degraded.get("reason")), degraded
    with trio.move_on_after(3):  # full for a while: still up, still saying so
        await trio.sleep_forever()
    assert stack.runtime is not None and stack.runtime.alive, stack.runtime.log()[-3000:]
    assert status(stack).get("state") == "degraded"

    ballast.unlink()
    wanted = ["before", *(f"while full {n}" for n in range(MESSAGES))]

    def agents() -> list[str]:
        return [t for t in texts(stack.timeline("conv-1")) if t in wanted]

    with contextlib.suppress(AssertionError):
        await wait_for(lambda: agents() == wanted, 60, "every accepted message")
    assert agents() == wanted, "not every accepted message in the chat, once and in order"
    await wait_for(lambda: status(stack).get("state") == "running", 30, "the runtime to recover")
    assert "reason" not in status(stack)

    # Killed while the disk is full, the runtime started again waits for room instead of
    # failing halfway through its start, and comes online by itself once there is room.
    runtime = stack.runtime
    await trio.to_thread.run_sync(fill, ballast)
    runtime.kill9()
    await agent.send_text("conv-1", "after the restart")
    runtime.start(wait=False)
    await wait_for(
        lambda: "the start waits for room" in runtime.log(), 30, "the start to wait for room"
    )
    assert runtime.alive, runtime.log()[-3000:]
    ballast.unlink()
    await stack.wait_lifecycle("online")
    await wait_for(
        lambda: "after the restart" in texts(stack.timeline("conv-1")), 60, "the new message"
    )
    assert agents() == wanted, "a message accepted before the restart lost or repeated"
