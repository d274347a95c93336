"""Pomodoro end to end: built, signed and installed from `apps/pomodoro` through the CLI, on
a real runtime with its web host and AppServer, its timer's surface in a real Chromium.

The agent starts a timer; it comes to the front with its surface, which counts down from
the runtime's record. The user's Pause, Resume and Interrupt, clicked in the surface's
frame, reach the runtime's deadline operation through the app: paused, the timer holds what
is left (through SIGKILLs of the app, the tool router and the web host); interrupted, the
agent gets exactly one final, `cancelled_by_user`, and chat is back in front. A surface
cannot name another call: its events carry no payload.
"""

from __future__ import annotations

import json
import math
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from actors.contracts import utc_timestamp
from actors.store import read_tool_deadlines
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import (
    Agent,
    final_of,
    finals,
    new_revision,
    revision_of,
    sent,
    tools_of,
)
from tests.web.conftest import in_browser, open_page, start_web_runtime, until
from tests.web.test_surfaces import inside, page_counters, session_rows, surface_frame

from .helpers import (
    SignedApp,
    cli,
    focus_stack,
    install_enabled,
    killed_and_back,
    owns_the_stage,
    remove_confirmed,
    signed_app,
    wait_foreground,
)

INSTANCE = f"pomodoro:{CONVERSATION}"
# How long the surface must be seen holding a paused timer's countdown still.
HOLD_S = 1.5


async def pomodoro_bundle(tmp_path: Path) -> SignedApp:
    return await trio.to_thread.run_sync(signed_app, tmp_path, "pomodoro", "pomodoro")


async def installed(stack: Stack, tmp_path: Path, browser: WebDriver) -> tuple[Agent, int]:
    """The runtime with its web host, the agent in the conversation, pomodoro installed and
    enabled, the page open: (the agent, the inventory revision listing the timer's tools)."""
    app = await pomodoro_bundle(tmp_path)
    await start_web_runtime(stack)
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    await install_enabled(stack, app)
    revision = await new_revision(stack, first)
    assert "pomodoro.start" in tools_of(stack)
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    return Agent(stack, client, "pomodoro"), revision


def operation(stack: Stack, call_id: str) -> dict[str, Any]:
    return read_tool_deadlines(stack.data_dir).get(call_id) or {}


async def operation_in(stack: Stack, call_id: str, state: str) -> dict[str, Any]:
    """The runtime's record of the timer once it is in `state`."""
    return await wait_for(
        lambda: (op := operation(stack, call_id)).get("state") == state and op,
        30,
        f"the timer {state}",
    )


def shown(stack: Stack) -> dict[str, Any]:
    """What the app keeps to show: its instance's session data."""
    rows = [
        data
        for instance, data, _ in session_rows(stack.data_dir, "pomodoro")
        if instance == INSTANCE
    ]
    return dict(json.loads(rows[0]) or {}) if rows else {}


def ends_at(record: dict[str, Any]) -> str:
    """The moment a running timer's record ends, as the app and the agent are told it."""
    return utc_timestamp(datetime.fromtimestamp(int(record["ends_ms"]) / 1000, UTC))


def started_progress(stack: Stack, call_id: str) -> list[dict[str, Any]]:
    return [
        env
        for env in sent(stack, "lineup.tool.progress")
        if env["correlation"]["call_id"] == call_id and env["payload"].get("stage") == "started"
    ]


def press(driver: WebDriver, frame: WebElement, button: str) -> None:
    """The user clicks `button` in the surface, once it is enabled."""
    driver.switch_to.frame(frame)
    try:
        until(driver, lambda d: d.find_element(By.ID, button).is_enabled())
        driver.find_element(By.ID, button).click()
    finally:
        driver.switch_to.default_content()


def showing(driver: WebDriver, frame: WebElement) -> tuple[str, int | None]:
    """(state, whole seconds left) as the surface shows them."""
    remaining = inside(driver, frame, "remaining")
    return inside(driver, frame, "state"), int(remaining) if remaining else None


async def surface_shows(
    driver: WebDriver, state: str, seconds: int | None = None
) -> tuple[WebElement, int | None]:
    """The surface frame once it shows `state` (and `seconds` left, if given)."""

    def there(d: WebDriver) -> tuple[WebElement, int | None] | None:
        frame = surface_frame(d, "pomodoro")
        now = showing(d, frame)
        return (frame, now[1]) if now[0] == state and seconds in (None, now[1]) else None

    return await in_browser(until, driver, there)


async def held(driver: WebDriver, frame: WebElement, seconds: int) -> None:
    """The surface shows the paused countdown at `seconds` throughout `HOLD_S`."""
    until_s = time.monotonic() + HOLD_S
    while time.monotonic() < until_s:
        assert await in_browser(showing, driver, frame) == ("paused", seconds)
        await trio.sleep(0.2)


async def paused_by_the_user(
    stack: Stack, driver: WebDriver, frame: WebElement, call_id: str
) -> int:
    """The user presses Pause: the runtime's timer, the app's display and the surface all
    hold what is left. Returns that, in ms."""
    await in_browser(press, driver, frame, "pause")
    paused = await operation_in(stack, call_id, "paused")
    remaining_ms = int(paused["remaining_ms"])
    assert 0 < remaining_ms < 60_000 and paused["ends_ms"] is None
    expected = {"state": "paused", "minutes": 1, "call_id": call_id, "remaining_ms": remaining_ms}
    await wait_for(lambda: shown(stack) == expected, 30, "the paused timer shown")
    frame, _ = await surface_shows(driver, "paused", math.ceil(remaining_ms / 1000))
    await held(driver, frame, math.ceil(remaining_ms / 1000))
    # The chat's line for the call says it is paused, and how long is left.
    line = await in_browser(until, driver, lambda d: _tool_line(d, "paused, "))
    assert re.fullmatch(r"paused, (\d{1,2} s|1 min) left", line), line
    return remaining_ms


def _afloat(driver: WebDriver) -> bool:
    """Whether the timer is shown picture-in-picture: the chat in front, its frame small
    and wholly in the window, nothing of it to scroll."""
    return bool(
        driver.execute_script(
            """
            const main = document.getElementById('main');
            const frame = document.querySelector('#surface-slot iframe');
            if (!frame || main.dataset.stage !== 'chat' || main.dataset.pip !== 'on') return false;
            const box = frame.getBoundingClientRect();
            return box.left >= 0 && box.top >= 0 && box.right <= innerWidth
              && box.bottom <= innerHeight && box.width > 0 && box.width < innerWidth / 2;
            """
        )
    )


def _fits(driver: WebDriver) -> bool:
    """Whether the framed surface's document fits its frame: no control scrolled away."""
    driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, "#surface-slot iframe"))
    try:
        page = "const p = document.scrollingElement;"
        return bool(
            driver.execute_script(
                page + "return p.scrollHeight <= innerHeight && p.scrollWidth <= innerWidth;"
            )
        )
    finally:
        driver.switch_to.default_content()


def _tool_line(driver: WebDriver, start: str) -> str | None:
    """The chat's line for the timer's call once it starts with `start`."""
    for line in driver.find_elements(By.CSS_SELECTOR, "#timeline .tool .detail"):
        text = str(line.get_attribute("textContent"))
        if text.startswith(start):
            return text
    return None


async def test_pomodoro_from_install_to_removal(
    stack: Stack, browser: WebDriver, tmp_path: Path
) -> None:
    agent, revision = await installed(stack, tmp_path, browser)
    call_id = "call_focus"
    await agent.client.submit(
        agent.invoke(call_id, "pomodoro.start", {"minutes": 1}, revision=revision)
    )
    # The timer comes to the front for the call, above chat, and then starts.
    await wait_foreground(stack, "pomodoro:")
    assert focus_stack(stack)[-2:] == ["chat:main", INSTANCE]
    running = await operation_in(stack, call_id, "running")
    await wait_for(lambda: started_progress(stack, call_id), 30, "`started` to the agent")

    # The surface counts down from the runtime's end: it shows a minute or less, moving.
    frame, left = await surface_shows(browser, "running")
    assert left is not None and 0 < left <= 60
    await surface_shows(browser, "running", left - 1)
    assert shown(stack)["ends_at"] == ends_at(running)
    await owns_the_stage(browser)
    # The chat says until when on the wall clock, not as a UTC timestamp.
    detail = await in_browser(until, browser, lambda d: _tool_line(d, "until "))
    assert re.fullmatch(r"until (\w{3} \d{1,2} )?\d{1,2}:\d{2}( [AP]M)?", detail), detail

    remaining_ms = await paused_by_the_user(stack, browser, frame, call_id)

    await in_browser(press, browser, frame, "resume")
    resumed = await operation_in(stack, call_id, "running")
    # It ends what was left from the resume: a later end than the first one.
    assert resumed["ends_ms"] > running["ends_ms"]
    assert resumed["ends_ms"] - remaining_ms >= running["ends_ms"] - 60_000
    frame, _ = await surface_shows(browser, "running")
    # Running again, the chat's line says until when once more.
    await in_browser(until, browser, lambda d: _tool_line(d, "until "))

    await in_browser(press, browser, frame, "interrupt")
    row = await final_of(stack, call_id)
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    assert [env["type"] for env in finals(stack, call_id)] == ["lineup.tool.error"]
    assert operation(stack, call_id)["ended_by"] == "app"
    await wait_foreground(stack, "chat:")
    await wait_for(lambda: shown(stack).get("state") == "stopped", 30, "the timer stopped")
    # With the chat in front the timer, which may float, stays in view: small, in the
    # window, its controls inside its frame; the chat has the main area.
    await in_browser(until, browser, _afloat)
    assert await in_browser(until, browser, _fits)

    # Disabled: its tools leave the inventory, and a late call is refused.
    enabled = revision_of(stack)
    await cli(stack, "app", "disable", "pomodoro")
    disabled = await new_revision(stack, enabled)
    assert not [method for method in tools_of(stack) if method.startswith("pomodoro.")]
    late = await agent.call(
        "call_late", "pomodoro.start", arguments={"minutes": 1}, revision=disabled
    )
    assert (late["state"], late["code"]) == ("failed", "app_disabled")

    await remove_confirmed(stack, "pomodoro")


async def test_a_paused_timer_outlives_kills_of_the_app_the_tool_router_and_the_web_host(
    stack: Stack, browser: WebDriver, tmp_path: Path
) -> None:
    agent, revision = await installed(stack, tmp_path, browser)
    call_id = "call_kept"
    await agent.client.submit(
        agent.invoke(call_id, "pomodoro.start", {"minutes": 1}, revision=revision)
    )
    await operation_in(stack, call_id, "running")
    frame, _ = await surface_shows(browser, "running")

    # A hostile surface names a call in its event: the page drops it (its payload breaks
    # the event's schema), and the timer goes on as it was.
    await in_browser(emit, browser, frame, "pause", {"call_id": "call_other"})
    await in_browser(
        until, browser, lambda d: page_counters(d)["dropped"] == {"invalid_payload": 1}
    )
    assert operation(stack, call_id)["state"] == "running"

    remaining_ms = await paused_by_the_user(stack, browser, frame, call_id)
    seconds = math.ceil(remaining_ms / 1000)
    display = {"state": "paused", "minutes": 1, "call_id": call_id, "remaining_ms": remaining_ms}
    for name in ("app.pomodoro", "tool_router", "web_host"):
        framed = await in_browser(frame.get_attribute, "src")
        await killed_and_back(stack, name)
        if name == "web_host":  # the page frames the surface again, under a new token
            await in_browser(framed_anew, browser, framed)
        kept = operation(stack, call_id)
        assert (kept["state"], kept["remaining_ms"], kept["ends_ms"]) == (
            "paused",
            remaining_ms,
            None,
        ), name
        assert shown(stack) == display, name
        # The surface, framed again after the web host's restart, shows it still paused.
        frame, _ = await surface_shows(browser, "paused", seconds)
    status = await agent.call("call_status", "pomodoro.status")
    assert status["output"] == {"state": "paused", "minutes": 1, "remaining_seconds": seconds}, (
        status
    )

    before = time.time()
    await in_browser(press, browser, frame, "resume")
    resumed = await operation_in(stack, call_id, "running")
    # It ends what was left, from the resume.
    assert before * 1000 + remaining_ms <= resumed["ends_ms"] <= time.time() * 1000 + remaining_ms
    frame, _ = await surface_shows(browser, "running")
    await in_browser(press, browser, frame, "interrupt")
    row = await final_of(stack, call_id)
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    assert len(finals(stack, call_id)) == 1
    await wait_foreground(stack, "chat:")


def frame_source(driver: WebDriver) -> str | None:
    """The address of the page's surface frame, if it has one."""
    found = driver.find_elements(By.CSS_SELECTOR, "#surface-slot iframe")
    return str(found[0].get_attribute("src")) if len(found) == 1 else None


def framed_anew(driver: WebDriver, old_source: str | None) -> None:
    until(driver, lambda d: frame_source(d) not in (None, old_source))


def emit(driver: WebDriver, frame: WebElement, name: str, payload: dict[str, Any]) -> None:
    """The surface's script emits `name` with `payload` through its own bridge."""
    driver.switch_to.frame(frame)
    try:
        driver.execute_script("lineup.emit(arguments[0], arguments[1]);", name, payload)
    finally:
        driver.switch_to.default_content()
