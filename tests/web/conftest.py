"""The web host in a real runtime on a real AppServer (the runtime tests' `stack`), and one
headless Chromium per test module, driven by Selenium through Debian's chromedriver.

Selenium's calls block: they run in a worker thread (`in_browser`), so the test's trio loop
keeps running the AppServer and the agent meanwhile. Waiting is on a condition with a
deadline (WebDriverWait in the browser, `wait_for` in trio).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
from selenium import webdriver
from selenium.common.exceptions import (
    NoSuchElementException,
    StaleElementReferenceException,
    TimeoutException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from actors import runtime_children
from actors.web_host import endpoint_listening, read_endpoint
from lineup.web_cmd import current_url
from peers.appserver import STORE_FILE
from tests.kernel.helpers import Runtime
from tests.runtime.conftest import stack
from tests.runtime.helpers import Stack, runtime_config, wait_for

from ._png import distinct_colours

__all__ = ["stack"]

T = TypeVar("T")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# This machine's network is closed, and a test browser must not reach out anyway.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
WAIT_S = 20.0
# The actors configured to work with the web host when there is one.
BESIDE_WEB = ("app.chat", "app_manager", "capability_gateway", "tool_router")


def chromium(*flags: str) -> Iterator[WebDriver]:
    """A headless Chromium with its own profile, with `flags` besides `CHROMIUM_FLAGS`."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, *flags):
        options.add_argument(flag)
    with tempfile.TemporaryDirectory(prefix="lineup-chromium-") as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            driver.set_window_size(1400, 900)
            yield driver
        finally:
            driver.quit()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    yield from chromium()


# What the microphone of `speaking_browser` hears, over and over: espeak-ng's voice.
SPOKEN = "focus twenty five"


def speech_wav(folder: Path, text: str = SPOKEN) -> Path:
    """`text` spoken by espeak-ng, then half a second of silence, as a 48 kHz WAV (what a
    browser's fake capture device plays in a loop)."""
    import subprocess

    spoken, wav = folder / "spoken.wav", folder / "speech.wav"
    subprocess.run(["espeak-ng", "-w", str(spoken), text], check=True, capture_output=True)
    subprocess.run(
        ["sox", str(spoken), "-r", "48000", str(wav), "pad", "0", "0.5"],
        check=True,
        capture_output=True,
    )
    return wav


@pytest.fixture(scope="module")
def speaking_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """A Chromium whose microphone is a file of speech (`SPOKEN`), the browser's prompt for
    it answered yes: a person who allows the page and talks."""
    wav = speech_wav(tmp_path_factory.mktemp("microphone"))
    yield from chromium(
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}",
    )


async def in_browser(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` in a worker thread: Selenium blocks, the trio loop must not."""
    return await trio.to_thread.run_sync(partial(call, *args))


def until(driver: WebDriver, condition: Callable[[WebDriver], T], timeout: float = WAIT_S) -> T:
    """`condition`'s first truthy value; the page redraws an item by replacing its element,
    so an element found a moment ago may be gone: the condition is asked again."""
    wait = WebDriverWait(
        driver,
        timeout,
        poll_frequency=0.05,
        ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
    )
    return wait.until(condition)


def web_config(data_dir: Path, url: str, **web_host: Any) -> dict[str, Any]:
    """The runtime tests' configuration, with the web host (any free port, and the settings
    `web_host` names) last, and the configurations of the actors beside a web host as they
    are then (the chat and the app manager tell it of changes, the gateway asks it to show
    notifications on open pages, hands it the files saved for a page and records in its
    pages, so the tool router offers tools that record)."""
    config = runtime_config(data_dir, url)
    with_web = runtime_children.default_config(data_dir, appserver_url=url, web_port=0).children
    web = with_web[-1]
    assert web.name == "web_host"
    config["children"].append(web.model_dump(mode="json"))
    config["children"][-1]["config"].update(web_host)
    beside_web = {child.name: child.config for child in with_web if child.name in BESIDE_WEB}
    for child in config["children"]:
        if child["name"] in beside_web:
            child["config"] = {**child["config"], **beside_web[child["name"]]}
    return config


async def start_web_runtime(stack: Stack, **web_host: Any) -> int:
    """An AppServer, the runtime with its web host on it (with the settings `web_host`
    names); the web host's port."""
    await stack.start_appserver()
    stack.data_dir.mkdir(parents=True, exist_ok=True)
    stack.runtime = Runtime(
        stack.data_dir, web_config(stack.data_dir, stack.url, **web_host), log_dir=stack.base
    )
    await stack.start_runtime()
    endpoint = await wait_for(
        lambda: (e := read_endpoint(stack.data_dir)) and endpoint_listening(e) and e,
        30,
        "the web host to listen",
    )
    return int(endpoint["port"])


def open_page(driver: WebDriver, data_dir: Path, conversation: str) -> None:
    """Open the address `lineup web url` prints, then the conversation, and wait online."""
    url = current_url(data_dir)
    assert url is not None
    driver.get(url)
    driver.get(driver.current_url + f"?conversation={conversation}")
    until(driver, lambda d: connection_state(d) == "online")


def connection_state(driver: WebDriver) -> str:
    return str(driver.find_element(By.ID, "connection").get_attribute("data-state"))


def shown_items(driver: WebDriver) -> list[tuple[str, str, str]]:
    """The timeline as the page shows it: (id, state, text) of each item, in order."""
    script = """
      return [...document.querySelectorAll('#timeline li.item')].map(
        (li) => [li.dataset.id, li.dataset.state, li.innerText]);
    """
    return [tuple(row) for row in driver.execute_script(script)]


def appserver_messages(stack: Stack, type_: str) -> list[dict[str, Any]]:
    """What the AppServer itself recorded as accepted, of one type, in order."""
    import json

    db = sqlite3.connect(f"file:{stack.appserver_dir / STORE_FILE}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT body FROM messages WHERE type = ? ORDER BY seq", (type_,))
        return [json.loads(body) for (body,) in rows]
    finally:
        db.close()


def save_screenshot(driver: WebDriver, path: Path) -> int:
    """Save what the browser shows as a PNG; the number of colours in it."""
    png = driver.get_screenshot_as_png()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return distinct_colours(png)


def stage_in_view(driver: WebDriver, width: int, height: int) -> dict[str, Any]:
    """At a viewport of `width` by `height` CSS pixels (a phone's below 500): the surface
    frame's box, the stage slot's it lies in (`slot`: left, top, right, bottom), whether the
    page itself scrolls, and whether the chat is shown beside it."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500},
    )
    # Measured after two animation frames: the page answers a change of size (a media
    # query's) before the next frame is drawn.
    script = """
      const done = arguments[arguments.length - 1];
      requestAnimationFrame(() => requestAnimationFrame(() => {
        const frame = document.querySelector('#surface-slot iframe');
        if (!frame) return done(null);
        const box = frame.getBoundingClientRect();
        const slot = document.getElementById('surface-slot').getBoundingClientRect();
        const page = document.scrollingElement;
        done({left: box.left, top: box.top, right: box.right, bottom: box.bottom,
              slot: [slot.left, slot.top, slot.right, slot.bottom],
              width: innerWidth, height: innerHeight,
              page_scrolls: page.scrollHeight > page.clientHeight
                || page.scrollWidth > page.clientWidth,
              chat_shown: document.getElementById('chat-view').offsetParent !== null});
      }));
    """

    def measured(d: WebDriver) -> dict[str, Any] | None:
        shown = d.execute_async_script(script)
        return shown if shown and shown["width"] == width and shown["right"] > 0 else None

    return dict(until(driver, measured))


def save_view(driver: WebDriver, name: str) -> None:
    """With LINEUP_SCREENSHOTS set, what the browser shows is saved there as NAME.png, for a
    person to look at."""
    folder = os.environ.get("LINEUP_SCREENSHOTS")
    if folder:
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))


# Every control of a framed surface's document that is shown outside its viewport (with the
# document not scrolled), and whether the document itself scrolls.
CONTROLS = """
  const page = document.scrollingElement;
  const outside = [];
  const controls = document.querySelectorAll('button, input, select, textarea, canvas');
  for (const control of controls) {
    const shown = control.getClientRects().length > 0;
    if (!shown || getComputedStyle(control).visibility === 'hidden') continue;
    const box = control.getBoundingClientRect();
    const [right, bottom] = [innerWidth + 0.5, innerHeight + 0.5];
    if (box.left < 0 || box.top < 0 || box.right > right || box.bottom > bottom) {
      const edges = [box.left, box.top, box.right, box.bottom].map(Math.round).join(',');
      const name = control.id || control.tagName.toLowerCase();
      outside.push(`${name} at ${edges} of ${innerWidth}x${innerHeight}`);
    }
  }
  return {outside, scrolled: page.scrollTop + page.scrollLeft,
          scrolls: page.scrollHeight > page.clientHeight || page.scrollWidth > page.clientWidth};
"""


def controls_in_view(driver: WebDriver, frame_css: str = "iframe.surface") -> dict[str, Any]:
    """Whether every control (button, input, select, textarea, canvas) of the framed
    surface is within its frame's viewport without scrolling: `CONTROLS`, once that holds
    (the frame is sized to its document a few animation frames after a change of size), or
    as last seen when it does not within a few seconds."""
    last: dict[str, Any] = {}

    def look(d: WebDriver) -> dict[str, Any] | None:
        nonlocal last
        d.switch_to.frame(d.find_element(By.CSS_SELECTOR, frame_css))
        try:
            last = dict(d.execute_script(CONTROLS))
        finally:
            d.switch_to.default_content()
        fits = not last["outside"] and not last["scrolled"] and not last["scrolls"]
        return last if fits else None

    try:
        return until(driver, look, timeout=5)
    except TimeoutException:
        return last


def default_viewport(driver: WebDriver) -> None:
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
