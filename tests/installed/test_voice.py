"""Voice end to end: built, signed and installed from `apps/voice` through the CLI, on a real
runtime with its web host and AppServer, in a real Chromium whose microphone is a file of
espeak-ng's speech.

The agent asks for a recording; the card in the chat asks the user, who starts it there:
the page records, showing the recording bar with the time and Stop, and the call's one
final carries the recording as the app's artifact, a WebM whose Opus sound is speech, not
silence, and what was said, written out by the host (`speech.transcribe`). A recording
stops at the user's Stop, at its limit, and when the app leaves the front, each said in the
final; a no and a "decide later" end the call with their codes.
"""

from __future__ import annotations

import array
import math
from typing import Any

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from actors.capability_gateway._audio import WEBM, read_recording
from actors.capability_gateway._opus import decode
from actors.store import read_artifact_data
from tests.capabilities.helpers import answer, card_for, cards
from tests.runtime.helpers import CONVERSATION, Stack
from tests.tools.helpers import Agent, final_of, finals, new_revision, tools_of
from tests.web.axe import axe_source, violations_at_sizes
from tests.web.conftest import (
    default_viewport,
    in_browser,
    open_page,
    save_view,
    speaking_browser,
    stage_in_view,
    start_web_runtime,
    until,
)
from tests.web.test_surfaces import inside, surface_frame

from .helpers import SampleApps, SignedApp, install_enabled, wait_foreground

__all__ = ["speaking_browser"]

SCOPE = "voice"
CARD = "#timeline .card.consent"
CARD_ITEM = "#timeline .kind-interaction:has(.card.consent)"  # the card and its item's head


@pytest.fixture(scope="module")
def voice(sample_apps: SampleApps) -> SignedApp:
    return sample_apps(SCOPE, SCOPE)


def _card_in_view(driver: WebDriver) -> bool:
    """The consent card shown; on a phone, where the app in front hides the chat, the chat
    is brought up first, as a person would."""
    card = driver.find_element(By.CSS_SELECTOR, CARD)
    if not card.is_displayed() and driver.find_element(By.ID, "dock-toggle").is_displayed():
        driver.find_element(By.ID, "dock-toggle").click()
    return bool(card.is_displayed())


def _start_recording(driver: WebDriver) -> None:
    until(driver, _card_in_view)
    until(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"{CARD} .record-start").is_enabled())
    driver.find_element(By.CSS_SELECTOR, f"{CARD} .record-start").click()


def _recording_for(driver: WebDriver, seconds: int) -> str:
    """The recording bar's words once it has shown `seconds` of recording."""

    def shown(d: WebDriver) -> str | None:
        bar = d.find_element(By.ID, "recording-bar")
        text = d.find_element(By.ID, "recording-text").text
        elapsed = text.rsplit(": ", 1)[-1].split(" of ")[0] if bar.is_displayed() else ""
        minutes, _, rest = elapsed.partition(":")
        done = elapsed and int(minutes) * 60 + int(rest) >= seconds
        return text if done else None

    return str(until(driver, shown))


def _switch_to(driver: WebDriver, title: str) -> None:
    """The user brings an open app in front with the switcher (the chat: "Chat")."""

    def clicked(d: WebDriver) -> bool:
        buttons = d.find_elements(By.CSS_SELECTOR, "#focus-stack .focus")
        button = next((b for b in buttons if b.text.startswith(title)), None)
        if button is None:
            return False
        button.click()
        return True

    until(driver, clicked)


def _click_in(driver: WebDriver, frame: Any, css: str) -> None:
    """Click `css` in the surface's frame once it is shown there and enabled (the frame is
    sized to its document a few frames after it is placed)."""

    def clicked(d: WebDriver) -> bool:
        d.switch_to.frame(frame)
        try:
            button = d.find_element(By.CSS_SELECTOR, css)
            if not (button.is_displayed() and button.is_enabled() and button.size["height"]):
                return False
            button.click()
            return True
        finally:
            d.switch_to.default_content()

    until(driver, clicked)


def _bar_shown(driver: WebDriver) -> bool:
    return bool(driver.find_element(By.ID, "recording-bar").is_displayed())


def _bar_gone(driver: WebDriver) -> bool:
    return not driver.find_element(By.ID, "recording-bar").is_displayed()


def speech_level(data: bytes) -> float:
    """The recording's sound as the root mean square of its samples (0 is silence)."""
    shown = read_recording(data, packets=True)
    samples = array.array("h")
    samples.frombytes(decode(shown.packets))
    return math.sqrt(sum(x * x for x in samples) / max(1, len(samples)))


async def recorded(stack: Stack, call_id: str) -> tuple[dict[str, Any], bytes]:
    """The call's output once it succeeded, and its recording's bytes as the store keeps
    them (size and digest checked)."""
    row = await final_of(stack, call_id, 90)
    assert row["state"] == "succeeded", (row["code"], row["history"])
    (final,) = finals(stack, call_id)
    assert final["type"] == "lineup.tool.result"
    output = dict(row["output"])
    found = read_artifact_data(stack.data_dir, output["artifact"]["artifact_id"])
    assert found is not None
    artifact, data = found
    assert artifact["app_scope"] == SCOPE and artifact["media_type"] == WEBM
    return output, data


async def test_the_agent_asks_and_the_page_records_the_user(
    stack: Stack, voice: SignedApp, speaking_browser: WebDriver
) -> None:
    browser = speaking_browser
    await start_web_runtime(stack)
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    await install_enabled(stack, voice)
    await new_revision(stack, first)
    assert "voice.request_recording" in tools_of(stack)
    agent = Agent(stack, client, SCOPE)
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)

    # The agent asks: the app comes in front with the prompt, the card asks the user, who
    # starts the recording in the page; the bar shows it, and the user stops it.
    prompt = "Say how long you want to focus"
    arguments = {"prompt": prompt, "max_seconds": 20}
    await client.submit(agent.invoke("call_user", "voice.request_recording", arguments))
    card = await card_for(stack, "audio.record")
    await wait_foreground(stack, f"{SCOPE}:")
    # The card and the recording bar have no serious accessibility violation, at a
    # desktop's size and a phone's; the bar is in view at both, wherever the user is.
    source = axe_source()
    clean = {"1280x800": [], "390x844": []}
    assert (
        await in_browser(
            violations_at_sizes, browser, source, _card_in_view, "voice-card", CARD_ITEM
        )
        == clean
    )
    await in_browser(_start_recording, browser)
    # The microphone loops a clip of about 1.8 s: four seconds hold one whole utterance
    # wherever in the loop the recording starts.
    bar = await in_browser(_recording_for, browser, 4)
    assert bar.startswith("Recording for voice: 0:0") and bar.endswith("of 0:20"), bar
    assert (
        await in_browser(
            violations_at_sizes, browser, source, _bar_shown, "voice-recording", "#recording-bar"
        )
        == clean
    )
    await in_browser(lambda: browser.find_element(By.ID, "recording-stop").click())
    # The host writes speech out: the app asks, the user lets it for this run.
    answer(stack, await card_for(stack, "speech.transcribe"), "session")
    output, data = await recorded(stack, "call_user")
    assert output["stopped"] == "user"
    assert "twenty five" in output["transcript"], output
    assert 1_500 <= output["duration_ms"] <= 20_000, output
    assert read_recording(data).duration_ms == output["duration_ms"]
    assert speech_level(data) > 500, "the recording is silence"
    await in_browser(until, browser, _bar_gone)
    assert not cards(stack), "a card left open"

    await _replayed(browser)
    await _stops_by_itself(stack, agent, browser, {card})
    # A no and a "decide later" end the call with their codes, nothing recorded.
    for call_id, choice, code in (
        ("call_no", "deny", "permission_denied"),
        ("call_later", "dismiss", "cancelled_by_user"),
    ):
        known = {c["interaction_id"] for c in cards(stack)}
        await client.submit(agent.invoke(call_id, "voice.request_recording", {"prompt": "Again?"}))
        answer(stack, await card_for(stack, "audio.record", known), choice)
        row = await final_of(stack, call_id, 60)
        assert (row["state"], row["code"]) == ("failed", code), row["history"]


async def _replayed(browser: WebDriver) -> None:
    """The app's surface says what it got; its Replay plays the recording, which the app
    hands it (the frame cannot fetch)."""
    await in_browser(_switch_to, browser, "Voice")
    frame = await in_browser(surface_frame, browser, SCOPE)
    assert await in_browser(inside, browser, frame, "state") == "recorded"
    await in_browser(_click_in, browser, frame, "#replay")
    assert await in_browser(inside, browser, frame, "replaying") == "1"
    for width, height in ((1280, 800), (390, 844)):
        await in_browser(stage_in_view, browser, width, height)
        await in_browser(save_view, browser, f"voice-recorded-{width}x{height}")
    await in_browser(default_viewport, browser)


async def _stops_by_itself(stack: Stack, agent: Agent, browser: WebDriver, known: set[str]) -> None:
    """A recording stops at its limit by itself, and when the user turns to another app
    while it records."""
    short = {"prompt": "Quick", "max_seconds": 2}
    await agent.client.submit(agent.invoke("call_limit", "voice.request_recording", short))
    known.add(await card_for(stack, "audio.record", known))
    await in_browser(_start_recording, browser)
    output, _ = await recorded(stack, "call_limit")
    assert output["stopped"] == "limit"
    assert 500 <= output["duration_ms"] <= 2_000 + 1_500, output
    await in_browser(until, browser, _bar_gone)

    longer = {"prompt": "Talk for a while", "max_seconds": 20}
    await agent.client.submit(agent.invoke("call_away", "voice.request_recording", longer))
    await card_for(stack, "audio.record", known)
    await wait_foreground(stack, f"{SCOPE}:")
    await in_browser(_start_recording, browser)
    await in_browser(_recording_for, browser, 1)
    await in_browser(_switch_to, browser, "Chat")
    output, _ = await recorded(stack, "call_away")
    assert output["stopped"] == "background"
    assert 500 <= output["duration_ms"] < 20_000, output
    await in_browser(until, browser, _bar_gone)
