"""Pomodoro end to end: built, signed and installed from `apps/pomodoro` through the CLI, on
a real runtime with its web host and AppServer, its timer's surface in a real Chromium.

The agent starts a timer; it comes to the front with its surface, which counts down from
the runtime's record. The user's Pause, Resume and Interrupt, clicked in the surface's
frame, reach the runtime's deadline operation through the app: paused, the timer holds what
is left (through SIGKILLs of the app, the tool router and the web host); interrupted, the
agent gets exactly one final, `cancelled_by_user`, and chat is back in front. A timer that
runs out says "Done" in its own frame. The chat's line for the call reads the local clock
and counts in minutes ("ends 12:27 · in 2 min"); no UTC timestamp is on the page. A
surface cannot name another call: its events carry no payload.
"""

from __future__ import annotations

import json
import math
import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest
import trio
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from actors.tool_router import read_tool_deadlines
from contracts import utc_timestamp
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
    SampleApps,
    SignedApp,
    cli,
    focus_stack,
    install_enabled,
    killed_and_back,
    looked_at,
    owns_the_stage,
    remove_confirmed,
    wait_foreground,
)

INSTANCE = f"pomodoro:{CONVERSATION}"
# How long the surface must be seen holding a paused timer's countdown still.
HOLD_S = 1.5
# The first timer's length: long enough to be counted in minutes on the chat's line.
MINUTES = 2
# How far behind the clock the page's line for a running timer may be (its tick).
TICK_MS = 15_000
# A moment written as the runtime writes it, which the page must never show.
UTC_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}|\bUTC\b")


@pytest.fixture(scope="module")
def pomodoro(sample_apps: SampleApps) -> SignedApp:
    return sample_apps("pomodoro", "pomodoro")


async def installed(stack: Stack, app: SignedApp, browser: WebDriver) -> tuple[Agent, int]:
    """The runtime with its web host, the agent in the conversation, pomodoro installed and
    enabled, the page open: (the agent, the inventory revision listing the timer's tools)."""
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
    stack: Stack, driver: WebDriver, frame: WebElement, call_id: str, minutes: int = 1
) -> int:
    """The user presses Pause: the runtime's timer, the app's display and the surface all
    hold what is left. Returns that, in ms."""
    await in_browser(press, driver, frame, "pause")
    paused = await operation_in(stack, call_id, "paused")
    remaining_ms = int(paused["remaining_ms"])
    assert 0 < remaining_ms < minutes * 60_000 and paused["ends_ms"] is None
    expected = {
        "state": "paused",
        "minutes": minutes,
        "call_id": call_id,
        "remaining_ms": remaining_ms,
    }
    await wait_for(lambda: shown(stack) == expected, 30, "the paused timer shown")
    frame, _ = await surface_shows(driver, "paused", math.ceil(remaining_ms / 1000))
    await held(driver, frame, math.ceil(remaining_ms / 1000))
    # The chat's line for the call says since when it is paused, and how long is left.
    line = await in_browser(until, driver, lambda d: _tool_line(d, "paused at "))
    found = re.fullmatch(r"paused at (?P<at>.+) · (?P<left>.+) left", line)
    assert found, line
    assert on_the_clock(found["at"], time.time()), line
    assert found["left"] == time_left(remaining_ms), line
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


def half_up(value: float) -> int:
    return math.floor(value + 0.5)


def time_left(ms: float) -> str:
    """A paused timer's time left as the chat says it: seconds under a minute, else minutes."""
    return f"{half_up(ms / 1000)} s" if ms < 60_000 else f"{half_up(ms / 60_000)} min"


def on_the_clock(shown: str, epoch_s: float) -> bool:
    """Whether `shown` ("12:27", "12:27 PM") is the local clock's minute of `epoch_s` (or of
    the minute before, for a moment read just after the minute turned)."""
    found = re.fullmatch(r"(\d{1,2}):(\d{2})(?: ([AP]M))?", shown)
    if not found:
        return False
    hour, minute = int(found[1]), int(found[2])
    if found[3]:
        hour = hour % 12 + (12 if found[3] == "PM" else 0)
    moments = (datetime.fromtimestamp(epoch_s - lag) for lag in (0, 1))
    return any((m.hour, m.minute) == (hour, minute) for m in moments)


def no_utc_anywhere(driver: WebDriver) -> None:
    """No moment on the page or in its frames is written as the runtime writes it."""
    texts = [str(driver.execute_script("return document.body.textContent"))]
    for frame in driver.find_elements(By.CSS_SELECTOR, "#surface-slot iframe"):
        driver.switch_to.frame(frame)
        try:
            texts.append(str(driver.execute_script("return document.body.textContent")))
        finally:
            driver.switch_to.default_content()
    found = [UTC_TIMESTAMP.search(text) for text in texts]
    assert not any(found), [f.group() for f in found if f]


def _frame_says(driver: WebDriver, element_id: str) -> str | None:
    """The text of an element of the timer's surface, while it is shown."""
    frame = surface_frame(driver, "pomodoro")
    driver.switch_to.frame(frame)
    try:
        found = driver.find_elements(By.ID, element_id)
        return str(found[0].text) if found and found[0].is_displayed() else None
    finally:
        driver.switch_to.default_content()


def _tool_line(driver: WebDriver, start: str) -> str | None:
    """The chat's line for the timer's call once it starts with `start`."""
    for line in driver.find_elements(By.CSS_SELECTOR, "#timeline .tool .detail"):
        text = str(line.get_attribute("textContent"))
        if text.startswith(start):
            return text
    return None


async def ends_line_is_right(browser: WebDriver, running: dict[str, Any]) -> None:
    """The chat says when the running timer ends on the wall clock, and in how many minutes."""
    line = await in_browser(until, browser, lambda d: _tool_line(d, "ends "))
    read_at = time.time()
    found = re.fullmatch(r"ends (?P<at>.+) · in (?P<n>\d+) min", line)
    assert found, line
    assert on_the_clock(found["at"], running["ends_ms"] / 1000), line
    left_ms = running["ends_ms"] - read_at * 1000
    assert int(found["n"]) in {half_up(left_ms / 60_000), half_up((left_ms + TICK_MS) / 60_000)}


async def a_short_timer_runs_out(agent: Agent, browser: WebDriver) -> None:
    """A short timer runs out: its frame says "Done", the chat's line when it ended, and the
    call is done, with no progress left on screen."""
    stack = agent.stack
    await agent.client.submit(agent.invoke("call_short", "pomodoro.start", {"seconds": 5}))
    await wait_foreground(stack, "pomodoro:")
    row = await final_of(stack, "call_short")
    assert (row["state"], row["output"]["state"]) == ("succeeded", "finished")
    await surface_shows(browser, "finished", 0)
    assert await in_browser(until, browser, lambda d: _frame_says(d, "state")) == "Done"
    ended_at = datetime.fromisoformat(row["output"]["ended_at"]).timestamp()
    line = await in_browser(until, browser, lambda d: _tool_line(d, "ended "))
    assert on_the_clock(line.removeprefix("ended "), ended_at), line
    item = "#timeline li[data-id='call_short']"
    await in_browser(
        until, browser, lambda d: d.find_element(By.CSS_SELECTOR, f"{item} .state").text == "done"
    )
    assert not await in_browser(browser.find_elements, By.CSS_SELECTOR, f"{item} progress")
    await in_browser(no_utc_anywhere, browser)
    # The chat is back in front, the timer afloat beside it, still saying it is done.
    await wait_foreground(stack, "chat:")
    await in_browser(until, browser, _afloat)
    assert await in_browser(until, browser, _fits)
    assert await in_browser(_frame_says, browser, "state") == "Done"
    await in_browser(looked_at, browser, "pomodoro-done")


async def test_pomodoro_from_install_to_removal(
    stack: Stack, browser: WebDriver, pomodoro: SignedApp
) -> None:
    agent, revision = await installed(stack, pomodoro, browser)
    call_id = "call_focus"
    await agent.client.submit(
        agent.invoke(call_id, "pomodoro.start", {"minutes": MINUTES}, revision=revision)
    )
    # The timer comes to the front for the call, above chat, and then starts.
    await wait_foreground(stack, "pomodoro:")
    assert focus_stack(stack)[-2:] == ["chat:main", INSTANCE]
    running = await operation_in(stack, call_id, "running")
    await wait_for(lambda: started_progress(stack, call_id), 30, "`started` to the agent")

    # The surface counts down from the runtime's end: it shows its minutes or less, moving.
    frame, left = await surface_shows(browser, "running")
    assert left is not None and 0 < left <= MINUTES * 60
    await surface_shows(browser, "running", left - 1)
    assert await in_browser(_frame_says, browser, "state") == "Focus"
    assert shown(stack)["ends_at"] == ends_at(running)
    await owns_the_stage(browser)
    await ends_line_is_right(browser, running)
    await in_browser(no_utc_anywhere, browser)
    await in_browser(looked_at, browser, "pomodoro-running")

    remaining_ms = await paused_by_the_user(stack, browser, frame, call_id, MINUTES)
    await in_browser(no_utc_anywhere, browser)
    await in_browser(looked_at, browser, "pomodoro-paused")

    await in_browser(press, browser, frame, "resume")
    resumed = await operation_in(stack, call_id, "running")
    # It ends what was left from the resume: a later end than the first one.
    assert resumed["ends_ms"] > running["ends_ms"]
    assert resumed["ends_ms"] - remaining_ms >= running["ends_ms"] - MINUTES * 60_000
    frame, _ = await surface_shows(browser, "running")
    # Running again, the chat's line says when it ends once more.
    await in_browser(until, browser, lambda d: _tool_line(d, "ends "))

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

    await a_short_timer_runs_out(agent, browser)

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
    stack: Stack, browser: WebDriver, pomodoro: SignedApp
) -> None:
    agent, revision = await installed(stack, pomodoro, browser)
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
