"""The stage's part of `lineup bench web`: the agent asks for an app in front (the pomodoro's
`pomodoro.start`, whose app is launched in front for the call) and the page frames it on the
stage; beside it, the runtime's own launch (its launch operation's `succeeded`), for the
same launch of the same run.

The pomodoro is built and signed with the real CLI into the bench's dir (as `lineup bench
apps` does), and installed and enabled as a user would. Each round starts from the app
closed: the agent's call, the page's stage turning to the app (a MutationObserver takes the
page's wall clock when `#main` says `data-stage="app"`), the launch operation's row; then
the call is cancelled and the app closed, and the page's stage is the chat's again before
the next round.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import trio

from ._apps_baselines import SAMPLE_APP, build_signed_sample
from ._apps_baselines import _lineup as lineup
from ._e2e_flow import CONVERSATION
from ._procs import BenchError

APP_SCOPE = SAMPLE_APP
METHOD = "pomodoro.start"
WAIT_S = 60.0

# Each time the stage turns to an app: the page's wall clock (ms since the epoch).
_WATCH = """
const main = document.getElementById("main");
const staged = (window.lineupStaged = []);
let onStage = main.dataset.stage === "app";
new MutationObserver(() => {
  const now = performance.timeOrigin + performance.now();
  const app = main.dataset.stage === "app";
  if (app && !onStage) staged.push(now);
  onStage = app;
}).observe(main, { attributes: true, attributeFilter: ["data-stage"] });
"""


async def install_pomodoro(data_dir: Path, work: Path) -> None:
    """The pomodoro built and signed into `work`, installed and enabled as a user would."""
    signed = await trio.to_thread.run_sync(build_signed_sample, work)
    trusted = data_dir / "trusted_keys"
    trusted.mkdir(parents=True, exist_ok=True)
    shutil.copy(signed.public_key, trusted / signed.public_key.name)
    where = ("--data-dir", data_dir)
    await trio.to_thread.run_sync(lineup, "app", "install", signed.bundle, *where)
    await trio.to_thread.run_sync(lineup, "app", "enable", APP_SCOPE, *where)


async def _until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (found := await check()):
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {WAIT_S:.0f} s waiting for {what}")
        await trio.sleep(0.02)
    return found


def _launched(data_dir: Path, since_ms: int) -> dict[str, Any] | None:
    """The pomodoro's launch operation begun since `since_ms`, once it succeeded."""
    from actors.app_manager.registry import read_apps

    for op in read_apps(data_dir)["operations"]:
        if op["kind"] == "launch" and op["app_scope"] == APP_SCOPE and op["created_ms"] >= since_ms:
            if op["state"] == "succeeded":
                return dict(op)
            if op["state"] in ("failed", "rolled_back"):
                raise BenchError(f"the pomodoro's launch {op['state']}: {op.get('detail')}")
    return None


class _Following:
    """What the bench has heard of one call: its first answer (`answered`, `first`) and
    whether the runtime has started its timer (`started`: a cancel before would cancel a
    launch still under way, which the next round would find half done)."""

    def __init__(self) -> None:
        self.answered = trio.Event()
        self.first: Any = None
        self.started = trio.Event()

    def stale(self) -> bool:
        """Refused for the inventory revision it named: one the runtime has moved past."""
        first = self.first
        return (
            first is not None
            and first.type == "lineup.tool.error"
            and first.payload().code == "stale_inventory_revision"
        )


async def _follow(call: Any, heard: _Following) -> None:
    """Follow `call` to its final, within the bench's wait."""
    with trio.fail_after(WAIT_S):
        async for event in call:
            if heard.first is None:
                heard.first = event
                heard.answered.set()
            if event.type == "lineup.tool.progress" and event.payload().stage == "started":
                heard.started.set()


async def _call(client: Any, following: trio.Nursery) -> tuple[Any, int, _Following]:
    """The round's call, followed in `following`, with when it was made (ns). An agent
    that called with the inventory it held before the last close reached it is refused
    (`stale_inventory_revision`) and asks again once it holds the new one, as an agent
    does: the round is timed from the call the runtime took."""
    while True:
        held = int(client.inventory(CONVERSATION).revision)
        asked_ns = time.time_ns()
        call = client.call(CONVERSATION, METHOD, {"minutes": 1}, app_scope=APP_SCOPE)
        heard = _Following()
        following.start_soon(_follow, call, heard)  # following a call submits it
        with trio.fail_after(WAIT_S):
            await heard.answered.wait()
        if not heard.stale():
            return call, asked_ns, heard

        async def newer(held: int = held) -> bool:
            return int(client.inventory(CONVERSATION).revision) > held

        await _until(newer, "the agent's next inventory")


def _live_instances(data_dir: Path) -> list[str]:
    from actors.app_manager.registry import read_apps

    return [
        i["instance_id"]
        for i in read_apps(data_dir)["instances"]
        if i["app_scope"] == APP_SCOPE and i["state"] not in ("closed", "failed")
    ]


async def measure_stage(
    data_dir: Path, client: Any, browser: Any, rounds: int, offset_ms: float
) -> dict[str, list[float]]:
    """`rounds` launches: agent's call → the stage shows the app (`stage_ready_ms`, on the
    page's clock less its offset from the bench's) and → the launch's `succeeded` row
    (`runtime_launch_ms`). `client` is an agent client that takes in its stream (the
    inventory, the call's receipts)."""
    driver = browser.driver
    await trio.to_thread.run_sync(driver.execute_script, _WATCH)

    async def listed() -> bool:
        inventory = client.inventory(CONVERSATION)
        return inventory is not None and any(t.method == METHOD for t in inventory.tools)

    await _until(listed, f"{METHOD} in the agent's inventory")
    stage: list[float] = []
    launch: list[float] = []
    for n in range(rounds):
        async with trio.open_nursery() as following:
            call, asked_ns, heard = await _call(client, following)

            async def staged(n: int = n) -> list[float] | None:
                at = await trio.to_thread.run_sync(driver.execute_script, "return lineupStaged;")
                return at if len(at) > n else None

            at_ms = (await _until(staged, "the app on the page's stage"))[n]
            stage.append(at_ms - offset_ms - asked_ns / 1e6)
            since_ms = asked_ns // 1_000_000
            op = await _until(
                lambda since=since_ms: trio.to_thread.run_sync(_launched, data_dir, since),
                "the launch's row",
            )
            launch.append(op["updated_ms"] - asked_ns / 1e6)
            with trio.fail_after(WAIT_S):
                await heard.started.wait()
            await client.cancel(CONVERSATION, call.call_id, APP_SCOPE)  # its final ends `_follow`
        for instance in _live_instances(data_dir):
            await trio.to_thread.run_sync(lineup, "app", "close", instance, "--data-dir", data_dir)

        async def closed() -> bool:
            gone = not _live_instances(data_dir)
            front = await trio.to_thread.run_sync(
                driver.execute_script, "return document.getElementById('main').dataset.stage;"
            )
            return gone and front != "app"

        await _until(closed, "the app closed and the chat back on the stage")
    return {"stage_ready_ms": stage, "runtime_launch_ms": launch}
