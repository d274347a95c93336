"""Installed apps' surfaces in a real headless Chromium, on a real runtime and AppServer.

Each test app is built, signed and installed like any app (`lineup app build | sign |
install | enable | launch`); the web host frames the surface of the app in front. The
canvas app's surface is shown inline, a card in the conversation as tall as its content,
moves to the stage (the surface asks) and back (the user does, by keyboard, from the
stage's header) without being loaded again, emits a declared event that
reaches the app's process and keeps its session data through the bridge, across a reload,
and asks the user for a file and saves one (`_file_cards`). The trojan's surface tries
every way out of its frame, and every one is blocked: a loopback listener the test runs
sees no request from it, the bridge messages it forges are dropped by the page (counted by
reason, in the page and in the web host's statistics) and refused again by the web host,
and the sizes it reports, absurd or a flood, leave the page's layout whole; its flood of
display requests is decided at the page's pace, and never takes the front back from the user.
"""

from __future__ import annotations

import http.server
import json
import shutil
import socketserver
import sqlite3
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from actors.app_manager.registry import read_apps
from actors.web_host._surfaces import find_surface
from contracts import ContractError
from tests.app_manager.conftest import lineup
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.helpers import Stack, wait_for

from ._file_cards import files_between_the_user_and_the_app
from ._png import distinct_colours
from .axe import axe_source, blocking_violations, page_and_frame_violations
from .conftest import (
    appserver_messages,
    controls_in_view,
    default_viewport,
    in_browser,
    open_page,
    save_view,
    start_web_runtime,
    until,
)
from .notifications import RECORD, allow_offered, answer_consent, look, notes, permit, recorded
from .trojan._app import GHOSTS

CONVERSATION = "conv-1"
SURFACE_FRAME = "iframe.surface"  # the page's one surface frame, on the stage or inline


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The signed bundles of the canvas and the trojan, and their publisher's key."""
    root = tmp_path_factory.mktemp("surface-apps")
    code, _, err = lineup("app", "keygen", "--out", root / "keys", "--name", "pat")
    assert code == 0, err
    made = {"key": root / "keys" / "pat.pub"}
    for name in ("canvas", "trojan"):
        bundle = root / f"{name}.bundle"
        code, _, err = lineup("app", "build", REPO_ROOT / "tests" / "web" / name, "--out", bundle)
        assert code == 0, err
        code, _, err = lineup("app", "sign", bundle, "--key", root / "keys" / "pat.key")
        assert code == 0, err
        made[name] = bundle
    return made


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Records every request it gets: any method, a WebSocket's upgrade included."""

    seen: list[str]

    def _record(self) -> None:
        self.seen.append(f"{self.command} {self.path}")
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    do_GET = do_POST = do_PUT = do_OPTIONS = _record

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """A loopback HTTP listener: (its port, the requests it has seen)."""
    seen: list[str] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    # The browser may open a connection ahead and leave it idle: its thread is not waited for.
    server.daemon_threads = True
    server.block_on_close = False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


async def install(stack: Stack, bundles: dict[str, Path], scope: str) -> None:
    trusted = stack.data_dir / "trusted_keys"
    trusted.mkdir(parents=True, exist_ok=True)
    shutil.copy(bundles["key"], trusted / "pat.pub")
    for args in (
        ("install", bundles[scope]),
        ("enable", scope),
        ("launch", scope, "--conversation", CONVERSATION),
    ):
        code, out, err = await trio.to_thread.run_sync(
            lambda args=args: lineup("app", *args, "--data-dir", stack.data_dir, "--json")
        )
        assert code == 0, f"lineup app {args}: {out} {err}"


def surface_frame(driver: WebDriver, scope: str) -> WebElement:
    """The page's surface frame once it shows `scope`'s surface."""

    def shown(d: WebDriver) -> WebElement | None:
        frames = d.find_elements(By.CSS_SELECTOR, SURFACE_FRAME)
        if len(frames) == 1 and frames[0].get_attribute("title") == scope.capitalize():
            return frames[0]
        return None

    return until(driver, shown)


def inside(driver: WebDriver, frame: WebElement, attribute: str) -> str:
    """The surface's `body[data-ATTRIBUTE]` once it is set (a surface error fails at once)."""

    def read(d: WebDriver) -> str | None:
        d.switch_to.frame(frame)
        try:
            body = d.find_element(By.TAG_NAME, "body")
            error = body.get_attribute("data-error")
            assert not error, f"the surface failed: {error}"
            return body.get_attribute(f"data-{attribute}")
        finally:
            d.switch_to.default_content()

    return until(driver, read)


def click_in_frame(driver: WebDriver, frame: WebElement, css: str) -> None:
    driver.switch_to.frame(frame)
    try:
        driver.find_element(By.CSS_SELECTOR, css).click()
    finally:
        driver.switch_to.default_content()


def in_frame(driver: WebDriver, frame: WebElement, css: str) -> str:
    driver.switch_to.frame(frame)
    try:
        return driver.find_element(By.CSS_SELECTOR, css).text
    finally:
        driver.switch_to.default_content()


def text_in_frame(driver: WebDriver, frame: WebElement, css: str) -> str:
    """The element's text whether or not it is drawn: a frame resized to nothing a moment
    has no rendered text, which is what `.text` reads."""
    driver.switch_to.frame(frame)
    try:
        return str(driver.find_element(By.CSS_SELECTOR, css).get_attribute("textContent"))
    finally:
        driver.switch_to.default_content()


def page_counters(driver: WebDriver) -> dict[str, Any]:
    raw = driver.execute_script(
        "const d = document.getElementById('surface-debug'); return d && d.dataset.counters;"
    )
    return dict(json.loads(raw)) if raw else {"relayed": 0, "dropped": {}}


def forged_drops(dropped: dict[str, int]) -> dict[str, int]:
    """The page's drops of what a surface forged. Drops for a window that is not the frame's
    (`source`) are left out: in some runs the page frames a surface a second time while it
    launches, and its first frame's own messages are then dropped as from another window."""
    return {reason: n for reason, n in dropped.items() if reason != "source"}


# What the trojan's attack at load has the page drop (`ui/attack.js`), by reason.
ATTACK_DROPS = {
    "scope_mismatch": 1,
    "undeclared_event": 1,
    "too_large": 1,
    "not_text": 1,
    "undeclared_capability": 1,
    "invalid_payload": 6,  # a payload off its schema, five sizes
    "invalid_json": 1,  # a size of NaN, which JSON does not have
    "undeclared_mode": 1,
}


def ask_display(driver: WebDriver, frame: WebElement, mode: str) -> Any:
    """What the surface's `lineup.display.request(mode)` answered: {mode} or {error}."""
    driver.switch_to.frame(frame)
    try:
        return driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "lineup.display.request(arguments[0]).then(done, (e) => done({error: e.code}));",
            mode,
        )
    finally:
        driver.switch_to.default_content()


# Where the page shows the surface's frame: in the stage's slot or in the inline card of the
# conversation (the chat then the main area), its box, and the chat's visible box.
PLACED = """
  const frame = document.querySelector(arguments[0]);
  const main = document.getElementById('main');
  const card = document.getElementById('surface-card');
  const box = frame.getBoundingClientRect();
  const chat = document.getElementById('chat-scroll').getBoundingClientRect();
  const slot = document.getElementById('surface-slot').getBoundingClientRect();
  const page = document.scrollingElement;
  return {stage: main.dataset.stage, inline: main.dataset.inline === 'on',
          in_card: Boolean(card) && card.contains(frame) && Boolean(card.closest('#timeline')),
          in_slot: document.getElementById('surface-slot').contains(frame),
          top: box.top, bottom: box.bottom, left: box.left, right: box.right,
          chat: [chat.top, chat.bottom, chat.left, chat.right],
          slot: [slot.top, slot.bottom, slot.left, slot.right],
          page_scrolls: page.scrollHeight > page.clientHeight
            || page.scrollWidth > page.clientWidth};
"""
# The surface's side: its document's height, the mode it heard, a mark a reload would lose.
HEARD = """
  return [Math.ceil(document.documentElement.getBoundingClientRect().height),
          lineup.display.mode(), window.mark || null];
"""


def placed(driver: WebDriver, frame: WebElement, mode: str) -> dict[str, Any]:
    """Where the frame is once the surface heard `mode` and the frame is as tall as the
    surface's document (one shorter than the stage and the inline cap: the canvas's, the
    trojan's)."""

    def sized(d: WebDriver) -> dict[str, Any] | None:
        shown = dict(d.execute_script(PLACED, SURFACE_FRAME))
        d.switch_to.frame(frame)
        try:
            content, heard, mark = d.execute_script(HEARD)
        finally:
            d.switch_to.default_content()
        height = shown["bottom"] - shown["top"]
        shown.update(height=height, content=content, mark=mark)
        return shown if heard == mode and abs(height - content) <= 1 else None

    return until(driver, sized)


def viewport(driver: WebDriver, width: int, height: int) -> None:
    """A viewport of `width` by `height` (a phone's below 500), once the page has drawn it."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500},
    )
    script = """
      const done = arguments[arguments.length - 1];
      requestAnimationFrame(() => requestAnimationFrame(() => done(innerWidth)));
    """
    until(driver, lambda d: d.execute_async_script(script) == width)


def inline_in_view(driver: WebDriver, width: int, height: int) -> dict[str, Any]:
    """At a viewport of `width` by `height`: where the inline frame is (`PLACED`), once the
    surface's controls are in its frame's view."""
    viewport(driver, width, height)
    controls = controls_in_view(driver, SURFACE_FRAME)
    assert controls == {"outside": [], "scrolled": 0, "scrolls": False}, (width, controls)
    save_view(driver, f"Canvas inline-{width}x{height}")
    return dict(driver.execute_script(PLACED, SURFACE_FRAME))


async def shown_inline_then_on_the_stage_and_back(browser: WebDriver, frame: WebElement) -> None:
    """The canvas declares `inline` first: it opens as a card in the conversation, the chat
    the main area, within the chat's pane at a desktop's size and a phone's; asked, it goes
    to the stage and back, the same document throughout (moved, not loaded again)."""
    shown = await in_browser(placed, browser, frame, "inline")
    assert shown["in_card"] and shown["stage"] == "chat", shown
    for width, height in ((1280, 800), (390, 844)):
        box = await in_browser(inline_in_view, browser, width, height)
        top, bottom, left, right = box["chat"]
        assert top <= box["top"] < box["bottom"] <= bottom, box
        assert left <= box["left"] < box["right"] <= right, box
        assert not box["page_scrolls"], box
    await in_browser(default_viewport, browser)
    found = await in_browser(page_and_frame_violations, browser, axe_source())
    assert found == {"page": [], "surface": []}, found
    await in_browser(_in_frame_script, browser, frame, "window.mark = 'kept';")

    assert await in_browser(ask_display, browser, frame, "stage") == {"mode": "stage"}
    shown = await in_browser(placed, browser, frame, "stage")
    assert shown["in_slot"] and shown["stage"] == "app" and not shown["inline"], shown
    assert shown["mark"] == "kept", shown
    assert not await in_browser(browser.find_elements, By.ID, "surface-card")
    await in_browser(back_into_the_chat_by_keyboard, browser, frame)

    assert await in_browser(ask_display, browser, frame, "inline") == {"mode": "inline"}
    shown = await in_browser(placed, browser, frame, "inline")
    assert shown["in_card"] and shown["stage"] == "chat" and shown["mark"] == "kept", shown


# The focused control: its id, its text, whether it shows a focus ring, whether it is in
# the inline card.
FOCUSED = """
  const e = document.activeElement;
  const style = getComputedStyle(e);
  return {id: e.id, text: e.textContent.trim(), in_card: Boolean(e.closest('#surface-card')),
          ring: e.matches(':focus-visible') && style.outlineStyle !== 'none'
            && parseFloat(style.outlineWidth) >= 2};
"""


def back_into_the_chat_by_keyboard(driver: WebDriver, frame: WebElement) -> None:
    """The canvas on the stage (it declares `inline`): the stage's header offers to move it
    back into the chat, a control the keyboard reaches with a visible focus ring; Enter puts
    it back as a card, and the card's Expand (then focused) brings it to the stage again,
    the same document throughout."""
    for width, height in ((1280, 800), (390, 844)):
        viewport(driver, width, height)
        save_view(driver, f"Canvas on the stage-{width}x{height}")
    default_viewport(driver)
    driver.execute_script("document.getElementById('dock-toggle').focus()")
    ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    focused = driver.execute_script(FOCUSED)
    assert (focused["id"], focused["text"], focused["ring"]) == (
        "stage-inline",
        "Move into the chat",
        True,
    ), focused
    tip = driver.find_element(By.ID, "stage-inline").get_attribute("title")
    assert tip == "Put Canvas back in the conversation, as a card"
    assert blocking_violations(driver, axe_source(), "#stage") == []
    assert driver.execute_script(FOCUSED)["id"] == "stage-inline"
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    shown = placed(driver, frame, "inline")
    assert shown["in_card"] and shown["stage"] == "chat" and shown["mark"] == "kept", shown
    focused = driver.execute_script(FOCUSED)
    assert (focused["text"], focused["in_card"], focused["ring"]) == ("Expand", True, True), focused
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    shown = placed(driver, frame, "stage")
    assert shown["in_slot"] and shown["stage"] == "app" and shown["mark"] == "kept", shown
    assert driver.execute_script(FOCUSED)["id"] == "stage-inline"


def _in_frame_script(driver: WebDriver, frame: WebElement, script: str) -> Any:
    driver.switch_to.frame(frame)
    try:
        return driver.execute_script(script)
    finally:
        driver.switch_to.default_content()


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def session_rows(data_dir: Path, scope: str) -> list[tuple[str, str, int]]:
    with closing(sqlite3.connect(f"file:{data_dir / 'runtime.db'}?mode=ro", uri=True)) as db:
        query = "SELECT instance_id, data, revision FROM app_session_data WHERE app_scope = ?"
        return db.execute(query, (scope,)).fetchall()


def web_host_extra(stack: Stack) -> dict[str, Any]:
    actors = stack.control({"type": "actors", "stats": True})["actors"]
    record = next(actor for actor in actors if actor["name"] == "web_host")
    return dict(record["statistics"]["extra"])


def web_statistics(stack: Stack) -> dict[str, Any]:
    return dict(web_host_extra(stack)["surfaces"])


def refused_of(stack: Stack, sender: str) -> dict[str, int]:
    """What the supervisor refused of `sender`, by code."""
    actors = stack.control({"type": "actors"})["actors"]
    return dict(next(actor for actor in actors if actor["name"] == sender)["refused"])


def nothing_framed(driver: WebDriver) -> bool:
    """No surface's frame on the page, and no inline card for one."""
    return not driver.find_elements(By.CSS_SELECTOR, f"{SURFACE_FRAME}, #surface-card")


async def close_and_launch_by_notice(stack: Stack, browser: WebDriver, instance: str) -> WebElement:
    """Close `instance` and launch it again while the page is open: each change reaches the
    page by the app manager's notice alone (the runtime's pages look without one once an
    hour). Closed, its frame and its card go; launched, its surface is sent unasked and
    framed under a new token, shown as it was (inline, the chat the main area). Its frame."""
    notices = web_host_extra(stack)["registry_notices"]
    old_src = str((await in_browser(surface_frame, browser, "canvas")).get_attribute("src"))
    for args in (("close", instance), ("launch", "canvas", "--conversation", CONVERSATION)):
        code, out, err = await trio.to_thread.run_sync(
            lambda args=args: lineup("app", *args, "--data-dir", stack.data_dir, "--json")
        )
        assert code == 0, f"lineup app {args}: {out} {err}"
        if args[0] == "close":
            await in_browser(until, browser, nothing_framed)
    frame = await in_browser(surface_frame, browser, "canvas")
    assert str(frame.get_attribute("src")) != old_src
    assert web_host_extra(stack)["registry_notices"] >= notices + 2
    shown = await in_browser(placed, browser, frame, "inline")
    assert shown["in_card"] and shown["stage"] == "chat", shown
    return frame


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read()


def check_served(src: str, port: int) -> None:
    """The surface's answers carry its policy, and only the bundle's signed files are served."""
    status, headers, body = fetch(src.split("#", maxsplit=1)[0])
    assert status == 200 and b"/surface-bridge.js" in body
    policy = headers["content-security-policy"]
    for directive in (
        "default-src 'none'",
        "connect-src 'none'",
        "form-action 'none'",
        f"frame-ancestors http://127.0.0.1:{port}",
        "sandbox allow-scripts",
    ):
        assert directive in policy, policy
    base = src.split("#", maxsplit=1)[0].rsplit("/ui/", 1)[0]
    for path in ("/manifest.json", "/signature.json", "/_app.py", "/ui/missing.js", "/%2e%2e/x.js"):
        assert fetch(base + path)[0] == 404, path


async def notified_on_the_page(
    stack: Stack, browser: WebDriver, frame: WebElement, port: int
) -> None:
    """An app's notification, with no desktop service: the page shows it with the browser's
    Notification API once the user allowed that (offered by a control until then), and as
    a note of its own where denied. The app's markup is text either way."""
    assert await in_browser(allow_offered, browser)
    await in_browser(look, browser, "allow-notifications")
    await in_browser(partial(permit, allowed=True), browser, port)
    await in_browser(until, browser, lambda d: not allow_offered(d))
    await in_browser(browser.execute_script, RECORD)
    await in_browser(click_in_frame, browser, frame, "#remind")
    await in_browser(
        until, browser, lambda d: answer_consent(d, "Allow until the runtime restarts")
    )
    assert await in_browser(inside, browser, frame, "notified") == "completed"
    head, body = "Canvas: Board <b>saved</b>", "Five strokes & counting"
    assert await in_browser(recorded, browser) == [{"title": head, "body": body}]
    await in_browser(partial(permit, allowed=False), browser, port)
    await in_browser(click_in_frame, browser, frame, "#remind")  # the grant covers it
    await in_browser(until, browser, lambda d: inside(d, frame, "notified").count("completed") == 2)
    assert await in_browser(notes, browser) == [f"{head}\n{body}"]
    await in_browser(look, browser, "notification-note")
    assert len(await in_browser(recorded, browser)) == 1
    code, out, err = await trio.to_thread.run_sync(
        lambda: lineup("settings", "show", "--json", "--data-dir", stack.data_dir)
    )
    assert code == 0, err
    by = {p["capability"]: p["by"] for p in json.loads(out)["providers"]}
    assert by["notification.show"] == "an open page of the web host (1 open)"
    # And where a file the app saves would go now, and how a file is chosen for it.
    own = stack.data_dir / "downloads"
    assert by["file.save"] == (
        "downloaded by an open page showing the app's conversation,"
        f" else saved in the runtime's downloads ({own})"
    )
    assert by["file.open"].startswith("chosen by the user")
    served = [a["detail"] for a in stack.audit() if a["code"] == "capability.completed"]
    assert [d.split(": ", 1)[1] for d in served if d.startswith("notification.show")] == [
        "shown by an open page, as a browser notification",
        "shown by an open page, as the page's toast",
    ]


async def test_a_surface_shows_emits_an_event_and_keeps_its_session_data(
    stack: Stack, browser: WebDriver, bundles: dict[str, Path], tmp_path: Path
) -> None:
    port = await start_web_runtime(stack, safety_look_s=3600)
    await install(stack, bundles, "canvas")
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)

    frame = await in_browser(surface_frame, browser, "canvas")
    assert frame.get_attribute("sandbox") == "allow-scripts"
    src = str(frame.get_attribute("src"))
    instance = src.rsplit("#", 1)[1]
    assert instance.startswith("canvas:")

    # The declared event reached the app's process, which patched the surface's state.
    assert await in_browser(inside, browser, frame, "visits") == "1"
    assert await in_browser(inside, browser, frame, "strokes") == "1"
    strokes = stack.data_dir / "apps" / "canvas" / "strokes.jsonl"
    assert lines(strokes) == [{"instance_id": instance, "x": 10, "y": 20, "colour": "red"}]
    # Session data written through the bridge is the store's, under the instance shown.
    assert session_rows(stack.data_dir, "canvas") == [(instance, '{"visits":1}', 1)]
    # Its subscription had the empty snapshot first, then the revision it wrote, pushed.
    await in_browser(until, browser, lambda d: inside(d, frame, "revisions") == "0,1")
    assert await in_browser(in_frame, browser, frame, "#saved") == '{"visits":1}'
    # Its capability request went to the gateway as the app's: this host has no clipboard.
    assert await in_browser(inside, browser, frame, "capability") == "unsupported_on_host"
    await shown_inline_then_on_the_stage_and_back(browser, frame)

    await trio.to_thread.run_sync(check_served, src, port)

    await notified_on_the_page(stack, browser, frame, port)
    # Files between the user and the app (`_file_cards`).
    await files_between_the_user_and_the_app(
        stack, browser, frame, port, conversation=CONVERSATION, folder=tmp_path
    )

    picture = tmp_path / "canvas-surface.png"
    png = await in_browser(lambda: frame.screenshot_as_png)
    picture.write_bytes(png)
    colours = distinct_colours(png)
    assert colours > 5, f"the surface's screenshot looks blank ({colours} colours)"

    # A reload frames the surface anew: its session data is the one it kept.
    await in_browser(browser.refresh)
    frame = await in_browser(surface_frame, browser, "canvas")
    assert await in_browser(inside, browser, frame, "visits") == "2"
    await in_browser(until, browser, lambda d: inside(d, frame, "revisions") == "1,2")
    assert session_rows(stack.data_dir, "canvas") == [(instance, '{"visits":2}', 2)]
    await wait_for(lambda: len(lines(strokes)) == 2, 10, "the second stroke")

    # The web host killed: restarted by its policy, the page frames the surface again under
    # a new token, and the surface goes on from the session data it kept.
    old_src = str(frame.get_attribute("src"))
    assert stack.kill("web_host")
    source = "const f = document.querySelector(arguments[0]); return f ? f.src : null;"
    await in_browser(
        until, browser, lambda d: d.execute_script(source, SURFACE_FRAME) not in (None, old_src)
    )
    frame = await in_browser(surface_frame, browser, "canvas")
    assert await in_browser(inside, browser, frame, "visits") == "3"
    await wait_for(lambda: len(lines(strokes)) == 3, 10, "the third stroke")

    frame = await close_and_launch_by_notice(stack, browser, instance)

    # A file of the cache entry changed on disk is no longer the signed one: not served.
    folder = str(frame.get_attribute("src")).split("#")[0].rsplit("/", 1)[0]
    (entry,) = (stack.data_dir / "bundles").glob("[0-9a-f]*/app/ui/canvas.css")
    entry.chmod(0o644)
    entry.write_text(entry.read_text() + "body { background: url(http://127.0.0.1:1/) }\n")
    statuses = [
        (await trio.to_thread.run_sync(fetch, f"{folder}/{name}"))[0]
        for name in ("canvas.js", "canvas.css")
    ]
    assert statuses == [200, 404]

    # Its app disabled, the instance is gone: so are the frame and the token's files.
    code, out, err = await trio.to_thread.run_sync(
        lambda: lineup("app", "disable", "canvas", "--data-dir", stack.data_dir, "--json")
    )
    assert code == 0, f"{out} {err}"
    await in_browser(until, browser, lambda d: not d.find_elements(By.CSS_SELECTOR, SURFACE_FRAME))
    assert (await trio.to_thread.run_sync(fetch, f"{folder}/canvas.js"))[0] == 404


IMPOSTOR = """
  window.violations = [];
  document.addEventListener('securitypolicyviolation', (event) => {
    window.violations.push(event.effectiveDirective + ' ' + event.blockedURI);
  });
  const first = document.querySelector(arguments[0]);
  const second = document.createElement('iframe');
  second.setAttribute('sandbox', 'allow-scripts');
  second.id = 'impostor';
  second.src = first.src.replace('/ui/index.html#', '/ui/impostor.html?port=' + arguments[1] + '#');
  document.body.appendChild(second);
"""

# From the page's own context: a socket of its own, asking the web host directly under the
# token it is sent for the surface in front.
DIRECT = """
  const done = arguments[arguments.length - 1];
  const [instance, texts] = [arguments[0], arguments[1]];
  const socket = new WebSocket('ws://' + location.host + '/surface-socket');
  const answers = [];
  socket.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    if (frame.t === 'opened' && frame.instance_id === instance) {
      const token = frame.token;
      for (const text of texts) socket.send(JSON.stringify({t: 'bridge', token, text}));
    } else if (frame.t === 'refused') {
      answers.push(frame.code);
      if (answers.length === texts.length) { socket.close(); done(answers); }
    }
  };
"""


# Asking for the surface of an instance of its choosing, from the page's own context: what
# is framed is the web host's word, so each ask is not a frame it takes.
OPEN = """
  const done = arguments[arguments.length - 1];
  const wanted = arguments[0];
  const socket = new WebSocket('ws://' + location.host + '/surface-socket');
  const codes = [];
  const open = (id) => socket.send(JSON.stringify({t: 'open', instance_id: id}));
  socket.onopen = () => wanted.forEach(open);
  socket.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    if (frame.t !== 'refused') return;  // what it is sent unasked: the surface in front
    codes.push(frame.code);
    if (codes.length === wanted.length) { socket.close(); done(codes); }
  };
"""


# Display requests the trojan posts at once, and how many a second the page decides of one
# surface's (`surfaces.js`, as docs/protocol.md states).
DISPLAY_FLOOD = 600
DISPLAY_PACE = 4
FLOOD = """
  const done = arguments[arguments.length - 1];
  floodDisplay(arguments[0]).then(done, (e) => done({error: String(e)}));
"""
# The trojan afloat over the chat, the chat the main area.
FLOATS = """
  const main = document.getElementById('main');
  return main.dataset.pip === 'on' && main.dataset.stage === 'chat';
"""


def focus_operations(stack: Stack) -> int:
    """How often the app manager was asked to change the app in front: its own record."""
    return sum(op["kind"] == "focus" for op in read_apps(stack.data_dir)["operations"])


def _flood_display(driver: WebDriver, frame: WebElement) -> dict[str, Any]:
    driver.switch_to.frame(frame)
    try:
        return dict(driver.execute_async_script(FLOOD, DISPLAY_FLOOD))
    finally:
        driver.switch_to.default_content()


async def display_requests_are_paced(stack: Stack, browser: WebDriver, frame: WebElement) -> None:
    """The trojan, in front, floods the page with requests for the float and the stage in
    turn: the page decides a few a second and answers the rest `rate_limited` with the mode
    in force, counted; the runtime is asked to change the front at most once a decided
    request; the page stays usable. Afloat once the chat is in front, the surface asking for
    the stage does not take the front back: that is the user's to do."""
    before = focus_operations(stack)
    flood = await in_browser(_flood_display, browser, frame)
    decided = len(flood["decided"])
    assert 1 <= decided <= DISPLAY_PACE * (1 + flood["ms"] // 1000), flood
    assert flood["refused"] == {"rate_limited": DISPLAY_FLOOD - decided}, flood
    assert set(flood["in_force"]) <= {"stage", "pip"}, flood
    # Its first request, the float, brought the chat to the front: the trojan floats over it.
    await in_browser(until, browser, lambda d: d.execute_script(FLOATS))
    await wait_for(
        lambda: (
            web_statistics(stack)["page_dropped"].get("rate_limited") == DISPLAY_FLOOD - decided
        ),
        10,
        "the flood counted in the web host's statistics",
    )
    # A message typed in the page still goes out.
    await in_browser(lambda: browser.find_element(By.ID, "composer-text").send_keys("still here\n"))
    await wait_for(
        lambda: (
            "still here"
            in [m["payload"]["text"] for m in appserver_messages(stack, "lineup.message")]
        ),
        10,
        "the message typed after the flood",
    )
    # Afloat, once a second has passed, it asks for the stage: answered with the float.
    limited = {"error": "rate_limited"}
    asked = await in_browser(
        until, browser, lambda d: (a := ask_display(d, frame, "stage")) != limited and a
    )
    assert asked == {"mode": "pip"}
    assert await in_browser(browser.execute_script, FLOATS)
    focused = focus_operations(stack) - before
    assert 1 <= focused <= flood["decided"].count("pip"), (focused, flood)
    assert str(read_apps(stack.data_dir)["settings"]["focus_stack"][-1]).startswith("chat:")


async def test_a_hostile_surface_is_held_in_its_frame(
    stack: Stack,
    browser: WebDriver,
    bundles: dict[str, Path],
    listener: tuple[int, list[str]],
) -> None:
    listener_port = listener[0]
    await start_web_runtime(stack)
    app_dir = stack.data_dir / "apps" / "trojan"
    app_dir.mkdir(parents=True, exist_ok=True)
    (app_dir / "orders.json").write_text(json.dumps({"listener_port": listener_port}))
    await install(stack, bundles, "trojan")
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)

    frame = await in_browser(surface_frame, browser, "trojan")
    instance = str(frame.get_attribute("src")).rsplit("#", 1)[1]
    assert await in_browser(inside, browser, frame, "done") == "1"
    report = json.loads(await in_browser(text_in_frame, browser, frame, "#report"))
    assert set(report) == {
        "parent_document",
        "cookie",
        "local_storage",
        "window_open",
        "top_location",
        "form_submit",
        "fetch",
        "xhr",
        "websocket",
        "image",
    }
    # window.open answers null and a form's submit() returns: both did nothing, which the
    # listener confirms below; every other attempt failed outright.
    assert report.pop("window_open") == "allowed: null"
    assert report.pop("form_submit") == "allowed: submitted"
    assert all(outcome.startswith("blocked") for outcome in report.values()), report

    # The control, a declared event, reached the app; each forged message was dropped.
    probes = app_dir / "probes.jsonl"
    await wait_for(lambda: lines(probes), 10, "the control probe")
    expected = ATTACK_DROPS
    counters = await in_browser(
        until, browser, lambda d: forged_drops((c := page_counters(d))["dropped"]) == expected and c
    )
    sources = counters["dropped"].get("source", 0)

    # The sizes within bounds, the flood's, were taken (once an animation frame); the frame
    # is then as tall as the trojan's document again, in the stage, and the page whole.
    shown = await in_browser(placed, browser, frame, "stage")
    top, bottom, left, right = shown["slot"]
    assert shown["in_slot"] and shown["stage"] == "app" and not shown["page_scrolls"], shown
    assert top <= shown["top"] < shown["bottom"] <= bottom, shown
    assert left <= shown["left"] < shown["right"] <= right, shown

    # A second frame that posts exactly what the first may post is not the first (and it
    # cannot take itself to the listener either: the page's frame-src).
    await in_browser(browser.execute_script, IMPOSTOR, SURFACE_FRAME, listener_port)
    counters = await in_browser(
        until,
        browser,
        lambda d: (c := page_counters(d))["dropped"].get("source") == sources + 1 and c,
    )
    assert counters["relayed"] == 2  # the first frame's `ready` and its control probe
    blocked = f"frame-src http://127.0.0.1:{listener_port}"
    # The page's policy refused it (a report names the origin only), and nothing arrived.
    await in_browser(until, browser, lambda d: blocked in d.execute_script("return violations"))
    assert lines(probes) == [{"instance_id": instance, "n": 1}]

    # The web host counts what pages dropped, and checks again what a page relays.
    await wait_for(
        lambda: web_statistics(stack).get("page_dropped") == {**expected, "source": sources + 1},
        10,
        "the page's drops in the web host's statistics",
    )
    forged = [
        json.dumps({"v": 1, "id": "a", "instance_id": "canvas:x", "type": "session.get"}),
        json.dumps(
            {
                "v": 1,
                "id": "b",
                "instance_id": instance,
                "type": "event",
                "name": "x",
                "payload": {},
            }
        ),
        json.dumps(
            {
                "v": 1,
                "id": "c",
                "instance_id": instance,
                "type": "event",
                "name": "probe",
                "payload": {"n": "1"},
            }
        ),
        json.dumps(
            {
                "v": 1,
                "id": "d",
                "instance_id": instance,
                "type": "event",
                "name": "probe",
                "payload": {"n": 1},
                "pad": "x" * 70_000,
            }
        ),
        "[1]",
    ]
    # Each is checked in a task of its own, so the answers come in any order.
    codes = await in_browser(browser.execute_async_script, DIRECT, instance, forged)
    assert sorted(codes) == sorted(
        ["scope_mismatch", "unknown_type", "invalid_payload", "too_large", "invalid_json"]
    )
    assert lines(probes) == [{"instance_id": instance, "n": 1}]
    # So are the trojan's push to the surface of another app's instance and its pushes to
    # made-up instances of its own scope (`_app.py`), none of them kept.
    others = {"ownership_mismatch": 1, "instance_not_found": GHOSTS}
    expected = {code: 1 for code in codes} | others
    refused = await wait_for(
        lambda: (r := web_statistics(stack)["refused"]).get("instance_not_found") == GHOSTS and r,
        10,
        "the web host to refuse the trojan's pushes",
    )
    assert refused == expected, refused

    wanted = ["chat:main", "trojan:elsewhere", 7]
    codes = await in_browser(browser.execute_async_script, OPEN, wanted)
    assert codes == ["invalid_frame"] * 3
    # The web host opens only a live instance's surface: one definite code for what is not.
    apps = read_apps(stack.data_dir)
    for asked, code in (("chat:main", "invalid_entrypoint"), ("trojan:x", "instance_not_found")):
        with pytest.raises(ContractError) as refused:
            find_surface(stack.data_dir, asked, apps)
        assert refused.value.code == code

    # Its word to the web host as the app manager's (`_app.py`): refused at the door.
    await wait_for(
        lambda: refused_of(stack, "app.trojan").get("sender_not_allowed") == 1,
        10,
        "the trojan's registry notice refused",
    )

    await display_requests_are_paced(stack, browser, frame)
    await only_the_browser_reached(browser, listener)


async def only_the_browser_reached(browser: WebDriver, listener: tuple[int, list[str]]) -> None:
    """Nothing reached the listener; the browser itself can (the control)."""
    port, seen = listener
    assert seen == []
    await in_browser(browser.get, f"http://127.0.0.1:{port}/control")
    assert seen[0] == "GET /control"
    assert set(seen) <= {"GET /control", "GET /favicon.ico"}  # what a visit asks for
