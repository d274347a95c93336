"""Files between the user and an app in the page, with the canvas in front: the card that
asks for a file carries a file input (what the app takes and how much, in words); a file
whose bytes contradict its name, or too large, is refused with its code and the card stays
open; a file taken is the app's artifact with exactly its bytes, never a path. An upload
that is not the page's own (no such token, another session's cookie, a token whose card
closed, a body over the request's size, declared or streamed) is refused. A file the app
saves while the page shows its conversation goes to the browser's downloads.

Each helper runs a step of the canvas test's flow (`test_surfaces`) on its runtime and
browser: no runtime of their own."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from actors.kernel import new_id
from actors.store import read_artifact_data
from actors.web_host import mint_key
from tests.runtime.helpers import Stack, wait_for

from .axe import axe_source, blocking_violations
from .conftest import default_viewport, in_browser, save_view, until

CHOOSER = "#timeline .card .chooser"
TEXT = b"milk\neggs\nflour\n"


def click_in_frame(driver: WebDriver, frame: WebElement, css: str) -> None:
    driver.switch_to.frame(frame)
    try:
        driver.find_element(By.CSS_SELECTOR, css).click()
    finally:
        driver.switch_to.default_content()


def frame_outcomes(driver: WebDriver, frame: WebElement, key: str) -> list[dict[str, Any]]:
    """The outcomes the canvas kept of its requests (`opened`, `filed`), oldest first."""
    driver.switch_to.frame(frame)
    try:
        raw = driver.find_element(By.TAG_NAME, "body").get_attribute(f"data-{key}")
    finally:
        driver.switch_to.default_content()
    return list(json.loads(raw)) if raw else []


def open_chooser(driver: WebDriver) -> WebElement | None:
    found = driver.find_elements(By.CSS_SELECTOR, CHOOSER)
    return found[-1] if found else None


def chosen_status(driver: WebDriver) -> tuple[str, str]:
    """What the open card says of the file chosen: its sentence and its code (kept in the
    DOM, not shown)."""
    status = driver.find_element(By.CSS_SELECTOR, f"{CHOOSER} .choose-status")
    return status.text, str(status.get_attribute("data-code") or "")


def _send(driver: WebDriver, path: Path) -> None:
    """The user picks `path` in the card's file input."""
    driver.find_element(By.CSS_SELECTOR, f"{CHOOSER} input[type=file]").send_keys(str(path))


def _pick(driver: WebDriver, path: Path, before: str) -> tuple[str, str]:
    """Pick `path`, then what the card says once that changed and is no longer sending."""
    _send(driver, path)

    def said(d: WebDriver) -> tuple[str, str] | None:
        shown = chosen_status(d)
        sending = shown[0].startswith("Sending")
        return None if sending or shown[0] in ("", before) else shown

    return until(driver, said)


def _card_at_sizes(driver: WebDriver, source: str) -> dict[str, Any]:
    """The card's blocking violations at a desktop's size and a phone's (where the chat is
    brought beside the app by its button), saved as PNGs for a person where asked."""
    found = {}
    for width, height in ((1280, 800), (390, 844)):
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500},
        )
        chooser = until(driver, open_chooser)
        if not chooser.is_displayed():
            driver.find_element(By.ID, "dock-toggle").click()
        until(driver, lambda d: (c := open_chooser(d)) is not None and c.is_displayed())
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", chooser)
        save_view(driver, f"file-card-{width}x{height}")
        found[f"{width}x{height}"] = blocking_violations(driver, source)
    default_viewport(driver)
    return found


async def a_file_chosen_in_the_card(
    stack: Stack, browser: WebDriver, frame: WebElement, files: Path, axe: str
) -> None:
    await in_browser(click_in_frame, browser, frame, "#open-file")
    chooser = await in_browser(until, browser, open_chooser)
    field = chooser.find_element(By.CSS_SELECTOR, "input[type=file]")
    assert field.get_attribute("accept") == "text/plain,image/png"
    hint = chooser.find_element(By.CSS_SELECTOR, ".hint").text
    assert hint == "Plain text or PNG pictures, up to 2 KB."
    assert chooser.find_element(By.TAG_NAME, "label").text == "Choose a file"
    assert await in_browser(_card_at_sizes, browser, axe) == {"1280x800": [], "390x844": []}

    # Text named as a picture: the runtime reads the bytes and refuses it; the card stays.
    (files / "fake.png").write_bytes(TEXT)
    said = await in_browser(_pick, browser, files / "fake.png", "")
    assert said == (
        "“fake.png” is not a PNG picture, as its name says: choose another file.",
        "unsupported_media_type",
    )
    await in_browser(save_view, browser, "file-card-refused")
    (files / "long.txt").write_bytes(b"x" * 3000)
    said = await in_browser(_pick, browser, files / "long.txt", said[0])
    assert said[1] == "too_large" and "larger than the 2 KB this app takes" in said[0]
    (files / "list.txt").write_bytes(TEXT)
    await in_browser(_send, browser, files / "list.txt")
    opened = await _outcomes(browser, frame, "opened", 1)
    assert opened[-1]["status"] == "completed", opened
    reference = opened[-1]["output"]["artifact"]
    assert set(reference) == {"artifact_id", "title", "media_type", "size"}
    assert (reference["title"], reference["media_type"], reference["size"]) == (
        "list.txt",
        "text/plain",
        16,
    )
    row, data = read_artifact_data(stack.data_dir, reference["artifact_id"]) or ({}, b"")
    assert (row["app_scope"], data) == ("canvas", TEXT)  # the canvas's, byte for byte
    await in_browser(until, browser, lambda d: open_chooser(d) is None)


def _token(driver: WebDriver, conversation: str, card: str) -> dict[str, Any]:
    """What the web host answers a socket of the page's own that asks to upload a file for
    `card`: {t: upload, href} or {t: refused, error}."""
    script = """
      const done = arguments[arguments.length - 1];
      const [conversation, card, clientId] = [arguments[0], arguments[1], arguments[2]];
      const socket = new WebSocket('ws://' + location.host + '/ws');
      let asked = false;
      socket.onopen = () => socket.send(JSON.stringify(
        {t: 'hello', page: 'forger' + Date.now(), conversation: conversation, since: 0, open: []}));
      socket.onmessage = (event) => {
        const frame = JSON.parse(event.data);
        if (frame.t === 'view' && !asked) {
          asked = true;
          socket.send(JSON.stringify({t: 'choose', client_id: clientId, interaction_id: card}));
        } else if (frame.client_id === clientId) {
          socket.close();
          done(frame);
        }
      };
    """
    return dict(driver.execute_async_script(script, conversation, card, new_id()))


def post(
    port: int,
    href: str,
    body: Any,
    cookie: str,
    *,
    length: int | None = None,
    name: str = "list.txt",
) -> tuple[int, dict[str, Any]]:
    """POST `body` to the web host as a page would (its Origin, the cookie `cookie`); a
    body that is an iterator of chunks goes chunked, with no length."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {
        "Origin": f"http://127.0.0.1:{port}",
        "Cookie": cookie,
        "x-file-name": name,
        "content-type": "text/plain",
    }
    if length is not None:
        headers["Content-Length"] = str(length)
    try:
        chunked = not isinstance(body, bytes)
        connection.request("POST", href, body=body, headers=headers, encode_chunked=chunked)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"{}")
    finally:
        connection.close()


def another_session(port: int, data_dir: Path) -> str:
    """The cookie of a second session of the web host (a key of its own exchanged)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", f"/?key={mint_key(data_dir)}")
        answer = connection.getresponse()
        answer.read()
        return str(answer.getheader("set-cookie")).split(";", 1)[0]
    finally:
        connection.close()


def _card_id(driver: WebDriver) -> str:
    chooser = until(driver, open_chooser)
    return str(chooser.get_attribute("data-chooser"))


def _deny(driver: WebDriver) -> None:
    for button in driver.find_elements(By.CSS_SELECTOR, "#timeline .card.consent button"):
        if button.text == "Deny" and button.is_enabled():
            button.click()
            return
    raise AssertionError("no Deny on an open card")


async def _outcomes(browser: WebDriver, frame: WebElement, key: str, n: int) -> list[Any]:
    """The canvas's outcomes of `key` once it has `n` of them."""
    return list(
        await in_browser(
            until, browser, lambda d: len(found := frame_outcomes(d, frame, key)) >= n and found
        )
    )


async def forged_uploads_are_refused(
    stack: Stack, browser: WebDriver, frame: WebElement, port: int, conversation: str
) -> None:
    cookie_name = f"lineup_web_{port}"
    own = f"{cookie_name}={browser.get_cookie(cookie_name)['value']}"
    await in_browser(click_in_frame, browser, frame, "#open-file")
    card = await in_browser(_card_id, browser)
    status, said = await in_browser(post, port, "/upload/not-a-token", TEXT, own)
    assert (status, said["code"]) == (404, "invalid_state"), said
    # Under another session's cookie a token is refused, and taken: it is not there again.
    first = await in_browser(_token, browser, conversation, card)
    other = await in_browser(another_session, port, stack.data_dir)
    assert (await in_browser(post, port, first["href"], TEXT, other))[0] == 403
    assert (await in_browser(post, port, first["href"], TEXT, own))[0] == 404
    # Over the request's size, declared or streamed: refused before or while reading.
    declared = await in_browser(_token, browser, conversation, card)
    status, said = await in_browser(post, port, declared["href"], b"x" * 4000, own)
    assert (status, said["code"]) == (413, "too_large"), said
    streamed = await in_browser(_token, browser, conversation, card)
    chunks = iter([b"x" * 1500, b"y" * 1500])
    status, said = await in_browser(post, port, streamed["href"], chunks, own)
    assert (status, said["code"]) == (413, "too_large"), said
    # A token of a card the user closed fills nothing, not the card asking after it either;
    # and a closed card gets no token.
    late = await in_browser(_token, browser, conversation, card)
    await in_browser(_deny, browser)
    await _outcomes(browser, frame, "opened", 2)
    await in_browser(click_in_frame, browser, frame, "#open-file")
    assert await in_browser(_card_id, browser) != card
    status, said = await in_browser(post, port, late["href"], TEXT, own)
    assert (status, said["code"]) == (409, "invalid_state"), said
    closed = await in_browser(_token, browser, conversation, card)
    assert (closed["t"], closed["error"]) == (
        "refused",
        "This request does not wait for a file any more.",
    )
    await in_browser(_deny, browser)
    outcomes = await _outcomes(browser, frame, "opened", 3)
    statuses = [outcome["status"] for outcome in outcomes]
    assert statuses == ["completed", "permission_denied", "permission_denied"]


async def a_saved_file_is_downloaded(
    stack: Stack, browser: WebDriver, frame: WebElement, downloads: Path
) -> None:
    await in_browser(
        browser.execute_cdp_cmd,
        "Browser.setDownloadBehavior",
        {"behavior": "allow", "downloadPath": str(downloads)},
    )
    await in_browser(click_in_frame, browser, frame, "#save-file")

    def allow_once(d: WebDriver) -> bool:
        for button in d.find_elements(By.CSS_SELECTOR, "#timeline .card.consent button"):
            if button.text == "Allow once" and button.is_enabled():
                button.click()
                return True
        return False

    await in_browser(until, browser, allow_once)
    filed = await _outcomes(browser, frame, "filed", 1)
    assert filed == [{"status": "completed", "output": {"name": "drawing.txt"}}]
    saved = downloads / "drawing.txt"
    await wait_for(lambda: saved.exists() and saved.read_bytes() == b"a red stroke", 20, "it")
    details = [a["detail"] for a in stack.audit() if a["source"] == "capability_gateway"]
    handed = "downloaded as drawing.txt by the open page showing the conversation"
    assert any(handed in detail for detail in details), details


async def files_between_the_user_and_the_app(
    stack: Stack,
    browser: WebDriver,
    frame: WebElement,
    port: int,
    *,
    conversation: str,
    folder: Path,
) -> None:
    """One chosen in the card, forged uploads refused, one the app saves handed to the
    browser of the page that shows `conversation`."""
    (folder / "files").mkdir()
    await a_file_chosen_in_the_card(stack, browser, frame, folder / "files", axe_source())
    await forged_uploads_are_refused(stack, browser, frame, port, conversation)
    await a_saved_file_is_downloaded(stack, browser, frame, folder / "downloads")
