"""Draw and guess end to end: the real app built, signed and installed through the CLI, a
real runtime with its web host, the agent's calls as envelopes on a real AppServer, and the
user's moves made with Selenium in the game's surface in a headless Chromium.

A round is a deadline operation: the app ends it with its own result when the user guesses
the word, presses Done or gives up, and the runtime ends it when time runs out, however
the app, the tool router and the web host were killed meanwhile; either way the agent gets
one final at once, and the game stays in front with its end screen (how the round ended,
what the word was) until the user closes it or the next round starts. The word the user
must guess reaches the surface only once the round is over.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from actors.tool_router import read_tool_deadlines
from tests.installed.helpers import (
    SampleApps,
    SignedApp,
    cli,
    focus_stack,
    install_enabled,
    looked_at,
    owns_the_stage,
    remove_confirmed,
    wait_foreground,
)
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import Agent, call_row, final_of, finals, new_revision, tools_of
from tests.web.conftest import (
    controls_in_view,
    default_viewport,
    in_browser,
    open_page,
    stage_in_view,
    start_web_runtime,
    until,
)
from tests.web.test_surfaces import page_counters, session_rows

SCOPE = "draw-and-guess"
INSTANCE = f"{SCOPE}:{CONVERSATION}"
START = "game.start_round"
FRAME = "#surface-slot iframe"
TITLE = "Draw and guess"
IN_VIEW = {"outside": [], "scrolled": 0, "scrolls": False}  # `controls_in_view` when all are
# The agent's drawing of a house: walls, a roof, a door, and a word.
HOUSE = [
    {"kind": "rect", "colour": "black", "points": [[300, 300], [700, 650]]},
    {"kind": "line", "colour": "red", "points": [[280, 310], [500, 120]], "width": 6},
    {"kind": "line", "colour": "red", "points": [[500, 120], [720, 310]], "width": 6},
    {"kind": "rect", "colour": "blue", "points": [[460, 500], [540, 650]]},
    {"kind": "stroke", "colour": "green", "points": [[0, 660], [300, 650], [1000, 660]]},
    {"kind": "text", "colour": "purple", "points": [[20, 20]], "text": "Home, sweet..."},
]


@pytest.fixture(scope="module")
def game(sample_apps: SampleApps) -> SignedApp:
    return sample_apps("draw_and_guess", SCOPE)


async def _ready(stack: Stack, game: SignedApp, browser: WebDriver) -> tuple[Agent, int]:
    """Runtime, web host, agent and page up, the game installed and enabled: the agent,
    and the inventory revision that offers the game's tool."""
    await start_web_runtime(stack)
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    assert START not in tools_of(stack)
    await install_enabled(stack, game)
    revision = await new_revision(stack, first)
    assert START in tools_of(stack)
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    return Agent(stack, client, SCOPE), revision


def _frame(driver: WebDriver) -> WebElement:
    """The page's surface frame once it shows the game."""

    def shown(d: WebDriver) -> WebElement | None:
        frames = d.find_elements(By.CSS_SELECTOR, FRAME)
        return frames[0] if len(frames) == 1 and frames[0].get_attribute("title") == TITLE else None

    return until(driver, shown)


def _in_frame(driver: WebDriver, frame: WebElement, script: str, *args: Any) -> Any:
    driver.switch_to.frame(frame)
    try:
        return driver.execute_script(script, *args)
    finally:
        driver.switch_to.default_content()


# A frame's document may not have its body yet: it shows nothing then.
BODY = "return document.body ? Object.assign({}, document.body.dataset) : {};"


def _body(driver: WebDriver, frame: WebElement) -> dict[str, str]:
    """The surface's `body` data attributes (a surface error fails at once)."""
    shown = dict(_in_frame(driver, frame, BODY))
    assert not shown.get("error"), f"the surface failed: {shown['error']}"
    return shown


def _shows(driver: WebDriver, frame: WebElement, wanted: dict[str, str]) -> dict[str, str]:
    """The surface's data attributes once each of `wanted` has its value ("*": any, set)."""

    def match(d: WebDriver) -> dict[str, str] | None:
        shown = _body(d, frame)
        fits = all(shown.get(k) if v == "*" else shown.get(k) == v for k, v in wanted.items())
        return shown if fits else None

    return until(driver, match)


def _playing(driver: WebDriver, round_: int, mode: str) -> tuple[WebElement, dict[str, str]]:
    """The game's frame once it shows round `round_` of `mode` running (its countdown on)."""
    frame = _frame(driver)
    wanted = {"state": "playing", "round": str(round_), "mode": mode, "remaining": "*"}
    return frame, _shows(driver, frame, wanted)


def _guess(driver: WebDriver, frame: WebElement, text: str) -> None:
    """The user types `text` in the guess box and presses Guess."""
    driver.switch_to.frame(frame)
    try:
        driver.find_element(By.ID, "guess").send_keys(text)
        driver.find_element(By.ID, "guess-button").click()
    finally:
        driver.switch_to.default_content()


def _draw(
    driver: WebDriver, frame: WebElement, start: tuple[int, int], *moves: tuple[int, int]
) -> None:
    """The user drags the pen over the board: pressed at `start` (from its centre), moved
    by each of `moves`, released."""
    driver.switch_to.frame(frame)
    try:
        board = driver.find_element(By.ID, "board")
        chain = ActionChains(driver).move_to_element_with_offset(board, *start).click_and_hold()
        for dx, dy in moves:
            chain.move_by_offset(dx, dy)
        chain.release().perform()
    finally:
        driver.switch_to.default_content()


def _click(driver: WebDriver, frame: WebElement, element_id: str) -> None:
    driver.switch_to.frame(frame)
    try:
        driver.find_element(By.ID, element_id).click()
    finally:
        driver.switch_to.default_content()


# What the surface's own script could send: a declared event, answered by the app.
EMIT = """
  const done = arguments[arguments.length - 1];
  lineup.emit(arguments[0], arguments[1]).then(() => done("ok"), (e) => done(e.code));
"""


def _emit(driver: WebDriver, frame: WebElement, name: str, payload: dict[str, Any]) -> str:
    driver.switch_to.frame(frame)
    try:
        return str(driver.execute_async_script(EMIT, name, payload))
    finally:
        driver.switch_to.default_content()


def _session(stack: Stack) -> dict[str, Any]:
    """The game instance's session data as the store keeps it."""
    rows = [
        data for instance, data, _ in session_rows(stack.data_dir, SCOPE) if instance == INSTANCE
    ]
    return dict(json.loads(rows[0])) if rows else {}


async def _started(stack: Stack, agent: Agent, call_id: str, arguments: dict[str, Any]) -> None:
    """The agent starts a round; the game comes to the front, over the chat."""
    await agent.client.submit(agent.invoke(call_id, START, arguments))
    await wait_foreground(stack, f"{SCOPE}:")
    assert focus_stack(stack)[-2:] == ["chat:main", INSTANCE]


def _end_text(driver: WebDriver) -> str | None:
    """What the game's end screen says, once it is shown in the game's frame."""
    frame = _frame(driver)
    driver.switch_to.frame(frame)
    try:
        found = driver.find_elements(By.ID, "end-text")
        if not found or not found[0].is_displayed():
            return None
        return str(found[0].text) or None
    finally:
        driver.switch_to.default_content()


async def _ends_in_front(stack: Stack, driver: WebDriver, pattern: str) -> re.Match[str]:
    """The game's end screen once its text fits `pattern`; the game stays in front."""
    text = await in_browser(until, driver, _end_text)
    found = re.fullmatch(pattern, text)
    assert found, text
    assert focus_stack(stack)[-1] == INSTANCE
    return found


async def _one_final(stack: Stack, call_id: str) -> dict[str, Any]:
    """The call's row once it ended, with exactly one final sent to the agent."""
    row = await final_of(stack, call_id)
    assert len(finals(stack, call_id)) == 1
    return row


async def test_draw_and_guess_from_install_to_removal(
    stack: Stack, browser: WebDriver, game: SignedApp
) -> None:
    agent, revision = await _ready(stack, game, browser)
    arguments = {"mode": "user_guesses", "word": "house", "shapes": HOUSE, "seconds": 60}
    await _started(stack, agent, "call_house", arguments)
    frame, shown = await in_browser(_playing, browser, 1, "user_guesses")
    assert (shown["shapes"], shown["score"], shown["guesses"]) == (str(len(HOUSE)), "0:0", "")
    assert 0 < int(shown["remaining"]) <= 60
    await owns_the_stage(browser)

    # The secret is nowhere the surface can read: not its session data, its state, its page.
    assert "house" not in json.dumps(_session(stack)).lower()
    state = await in_browser(_in_frame, browser, frame, "return JSON.stringify(lineup.state());")
    page = await in_browser(_in_frame, browser, frame, "return document.documentElement.outerHTML;")
    assert "house" not in state.lower() and "house" not in page.lower()

    # The user plays at a laptop's size: the guess box is in view, nothing scrolled.
    await in_browser(stage_in_view, browser, 1280, 800)
    assert await in_browser(controls_in_view, browser) == IN_VIEW

    # A surface cannot end the round without the word: Done is for a drawing round, and
    # a guess over the declared length is dropped by the page.
    assert await in_browser(_emit, browser, frame, "done", {}) == "ok"
    await in_browser(_in_frame, browser, frame, "lineup.emit('guess', {text: 'x'.repeat(81)});")
    dropped = await in_browser(until, browser, lambda d: page_counters(d)["dropped"])
    assert dropped == {"invalid_payload": 1}
    await in_browser(_guess, browser, frame, "tree")
    await in_browser(_shows, browser, frame, {"guesses": "tree", "state": "playing"})
    assert call_row(stack, "call_house")["state"] == "deadline"  # type: ignore[index]

    await in_browser(_guess, browser, frame, " House ")
    assert await in_browser(controls_in_view, browser) == IN_VIEW  # typing scrolled nothing
    await in_browser(default_viewport, browser)
    row = await _one_final(stack, "call_house")
    assert row["state"] == "succeeded", row
    output = dict(row["output"])
    assert output.pop("seconds_used") <= 60
    assert output == {
        "mode": "user_guesses",
        "word": "house",
        "outcome": "guessed",
        "guesses": ["tree", "House"],
        "shapes": [],
        "round": 1,
        "score": {"user": 1, "agent": 0},
    }
    # The game stays in front with its end: right, the word, and how long it took.
    used = row["output"]["seconds_used"]
    took = f"{used // 60}:{used % 60:02d}"
    await _ends_in_front(stack, browser, f"Correct! It was “house” — you won in {took}")
    await in_browser(_shows, browser, frame, {"state": "ended", "shapes": str(len(HOUSE))})
    await in_browser(looked_at, browser, "game-end")
    ended = await wait_for(lambda: (s := _session(stack)).get("state") == "ended" and s, 30, "end")
    assert (ended["outcome"], ended["score"]) == ("guessed", {"user": 1, "agent": 0})
    assert ended["word"] == "house"  # told once the round is over, never before
    # Closed from its end screen: the chat is in front again.
    await in_browser(_click, browser, frame, "close")
    await wait_foreground(stack, "chat:")
    await wait_for(lambda: INSTANCE not in focus_stack(stack), 30, "the game closed")

    # Disabled: the tool leaves the inventory under a new revision; a late call is refused.
    await cli(stack, "app", "disable", SCOPE)
    disabled = await new_revision(stack, revision)
    assert START not in tools_of(stack)
    late = await agent.call("call_late", START, arguments=arguments, revision=disabled)
    assert (late["state"], late["code"]) == ("failed", "app_disabled")
    assert len(finals(stack, "call_late")) == 1

    await remove_confirmed(stack, SCOPE)


async def test_the_user_draws_two_strokes_and_presses_done(
    stack: Stack, browser: WebDriver, game: SignedApp
) -> None:
    agent, _ = await _ready(stack, game, browser)
    await _started(stack, agent, "call_cat", {"mode": "user_draws", "word": "cat", "seconds": 60})
    frame, _ = await in_browser(_playing, browser, 1, "user_draws")
    status = await in_browser(
        _in_frame, browser, frame, "return document.getElementById('status').textContent;"
    )
    assert status.startswith("Draw: cat.")
    # A guess has no place in a round the user draws: it changes nothing.
    assert await in_browser(_emit, browser, frame, "guess", {"text": "cat"}) == "ok"

    await in_browser(_draw, browser, frame, (-200, -100), (40, 10), (40, 30), (60, -20))
    await in_browser(_shows, browser, frame, {"shapes": "1"})
    await in_browser(_draw, browser, frame, (60, -60), (0, 40), (-20, 20))
    await in_browser(_shows, browser, frame, {"shapes": "2", "guesses": ""})
    await in_browser(_click, browser, frame, "done")

    row = await _one_final(stack, "call_cat")
    output = row["output"]
    assert (output["mode"], output["word"], output["outcome"]) == ("user_draws", "cat", "drawn")
    assert (output["guesses"], output["round"]) == ([], 1)
    assert output["score"] == {"user": 1, "agent": 0}
    first, second = output["shapes"]
    assert [first["kind"], second["kind"]] == ["stroke", "stroke"]
    assert len(first["points"]) >= 4 and len(second["points"]) >= 3
    # The board is 600 px wide for 1000 units: the first stroke starts left of centre and
    # goes right, the second starts right of it and goes down.
    assert first["points"][0][0] < 500 < second["points"][0][0]
    assert first["points"][-1][0] > first["points"][0][0]
    assert second["points"][1][1] > second["points"][0][1]
    took = f"{output['seconds_used'] // 60}:{output['seconds_used'] % 60:02d}"
    drew = f"Done! You drew “cat” in {took} — the agent has your drawing"
    await _ends_in_front(stack, browser, drew)


def _restarted(stack: Stack, name: str, before: int) -> bool:
    assert stack.runtime is not None
    record = stack.runtime.actors()[name]
    return int(record["restarts"]) > before and record["pid"] is not None


async def _kill(stack: Stack, name: str) -> None:
    """SIGKILL an actor and wait until its next process runs."""
    assert stack.runtime is not None
    before = int(stack.runtime.actors()[name]["restarts"])
    assert stack.kill(name)
    await wait_for(lambda: _restarted(stack, name, before), 30, f"{name} restarted")


async def test_a_round_outlives_kills_and_ends_once(
    stack: Stack, browser: WebDriver, game: SignedApp
) -> None:
    agent, _ = await _ready(stack, game, browser)
    kite = {"mode": "user_guesses", "word": "kite", "shapes": HOUSE[:1], "seconds": 60}
    await _started(stack, agent, "call_kite", kite)
    frame, _ = await in_browser(_playing, browser, 1, "user_guesses")
    await in_browser(_guess, browser, frame, "box")
    await in_browser(_shows, browser, frame, {"guesses": "box"})

    # The game, the tool router and the web host killed mid-round: the page frames the
    # surface again, the round goes on where it was, and the right guess ends it once.
    old = str(frame.get_attribute("src"))
    for name in (f"app.{SCOPE}", "tool_router", "web_host"):
        await _kill(stack, name)
    source = "const f = document.querySelector(arguments[0]); return f ? f.src : null;"
    await in_browser(until, browser, lambda d: d.execute_script(source, FRAME) not in (None, old))
    frame, _ = await in_browser(_playing, browser, 1, "user_guesses")
    await in_browser(_shows, browser, frame, {"guesses": "box"})
    await in_browser(_guess, browser, frame, "KITE")
    row = await _one_final(stack, "call_kite")
    assert (row["output"]["outcome"], row["output"]["guesses"]) == ("guessed", ["box", "KITE"])
    await _ends_in_front(stack, browser, "Correct! It was “kite” — you won in 0:[0-5][0-9]")

    # A round whose time runs out while the game and the tool router are down ends once,
    # with the runtime's time-up result; the game records it when it runs again.
    boat = {"mode": "user_guesses", "word": "boat", "shapes": HOUSE[1:3], "seconds": 15}
    await _started(stack, agent, "call_boat", boat)
    await in_browser(_playing, browser, 2, "user_guesses")
    ends_ms = int(read_tool_deadlines(stack.data_dir)["call_boat"]["ends_ms"])
    await wait_for(lambda: time.time() * 1000 >= ends_ms - 1500, 30, "the round about to end")
    assert stack.kill(f"app.{SCOPE}") and stack.kill("tool_router")
    row = await _one_final(stack, "call_boat")
    assert row["state"] == "succeeded", row
    assert row["output"]["state"] == "finished"
    ended = await wait_for(lambda: (s := _session(stack)).get("state") == "ended" and s, 30, "end")
    assert (ended["round"], ended["outcome"]) == (2, "time_up")
    assert ended["score"] == {"user": 1, "agent": 1}
    await _ends_in_front(stack, browser, "Time's up — it was “boat”")
    assert len(finals(stack, "call_kite")) == len(finals(stack, "call_boat")) == 1
