"""The whiteboard end to end: built, signed and installed from `apps/whiteboard` through the
CLI, on a real runtime with its web host and AppServer, drawn on in a real Chromium.

The agent opens the board (in front of the chat, where it stays), draws on it with
`lineup.app.state.patch`, the user draws a stroke with the mouse, and the agent reads it
back (`board.summary`) and takes it away as a PNG and an SVG whose pixels and elements are
where the shapes are (`board.export`, in the background: the board stays in front). The
chat beside the board shows the PNG's picture, and its Save puts the same bytes in the
runtime's downloads and in the browser's; the page gets that picture only in its own
conversation, by an id it was handed, and once the app is removed its Save says the file is
gone. Two
pages of one board each add shapes, at the same revision too: no write is lost. An export
outlives a SIGKILL of the app, of the tool router and of the web host with one final each,
and the board stays what was committed. A patch that breaks the shapes' contract changes
nothing, with its code in the app's diagnostics; one aimed at another app's instance never
reaches it. Saving the board as a file asks the user in the chat (a consent card axe-core
finds no serious violation in): allowed once with its button, it is in the downloads;
denied the next time, the agent gets `permission_denied` and no file is made.
"""

from __future__ import annotations

import json
import random
import sqlite3
import xml.etree.ElementTree as ET
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import trio
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from actors.store import read_artifacts, read_diagnostics
from apps.whiteboard._board import board_of, check_shape, empty_board, merge
from contracts import Code, ContractError
from tests.capabilities.helpers import answer, card_for, cards
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import (
    Agent,
    call_row,
    final_of,
    finals,
    new_revision,
    revision_of,
    sent,
    tools_of,
)
from tests.web._png import rgb_rows
from tests.web.axe import axe_source, violations_at_sizes
from tests.web.conftest import (
    in_browser,
    open_page,
    start_web_runtime,
    until,
)
from tests.web.test_surfaces import SURFACE_FRAME, ask_display, fetch, inside, surface_frame

from .helpers import (
    SampleApps,
    SignedApp,
    cli,
    focus_stack,
    install_enabled,
    killed_and_back,
    owns_the_stage,
    remove_confirmed,
    wait_foreground,
)

SCOPE = "whiteboard"
TOOLS = ["board.create", "board.export", "board.save", "board.summary"]
RGB = {"red": (0xD6, 0x27, 0x28), "blue": (0x1F, 0x77, 0xB4), "green": (0x2C, 0xA0, 0x2C)}
WHITE = (0xFF, 0xFF, 0xFF)
RECT = {"kind": "rect", "colour": "red", "points": [[600, 100], [900, 300]], "width": 6}
TEXT = {"kind": "text", "colour": "blue", "points": [[100, 100]], "text": "Plan <&> go"}


@pytest.fixture(scope="module")
def whiteboard(sample_apps: SampleApps) -> SignedApp:
    return sample_apps("whiteboard", SCOPE)


async def installed(stack: Stack, app: SignedApp, browser: WebDriver) -> Agent:
    """The runtime with its web host, the agent in the conversation, the page open on it,
    and the whiteboard installed and enabled: its tools under a new inventory revision."""
    await start_web_runtime(stack)
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    await install_enabled(stack, app)
    await new_revision(stack, first)
    assert sorted(m for m in tools_of(stack) if m.startswith("board.")) == TOOLS
    return Agent(stack, client, SCOPE)


async def create(agent: Agent, call_id: str, title: str) -> str:
    """`board.create`: the board's instance, in front of the chat."""
    row = await agent.call(call_id, "board.create", arguments={"title": title})
    assert row["state"] == "succeeded", (row["code"], row["history"])
    instance = str(row["output"]["instance_id"])
    assert instance.startswith(f"{SCOPE}:") and row["output"]["title"] == title
    await wait_foreground(agent.stack, instance)
    return instance


async def patch(agent: Agent, instance: str, body: dict[str, Any], scope: str = SCOPE) -> str:
    """The agent's `lineup.app.state.patch` to `instance` (addressed to app `scope`): its id."""
    envelope = agent.client.envelope(
        "lineup.app.state.patch",
        CONVERSATION,
        {"patch": body},
        app_scope=scope,
        instance_id=instance,
    )
    verdict = await agent.client.submit(envelope)
    assert verdict.status == "accepted", verdict
    return str(envelope["id"])


def board(stack: Stack, instance: str) -> tuple[dict[str, Any], int]:
    """The board as the store committed it: (data, revision)."""
    path = f"file:{stack.data_dir / 'runtime.db'}?mode=ro"
    with closing(sqlite3.connect(path, uri=True)) as db:
        query = (
            "SELECT data, revision FROM app_session_data WHERE app_scope = ? AND instance_id = ?"
        )
        data, revision = db.execute(query, (SCOPE, instance)).fetchone()
    return json.loads(data), int(revision)


def shown(driver: WebDriver, frame: WebElement, attribute: str, value: str) -> bool:
    return until(driver, lambda d: inside(d, frame, attribute) == value) is True


def framed_anew_shows(driver: WebDriver, attributes: dict[str, str]) -> bool:
    """Whether the surface, its frame found anew at each look (a restarted web host's page
    frames it again, and an old frame never changes), shows each `data-` attribute."""

    def looks(d: WebDriver) -> bool:
        frames = d.find_elements(By.CSS_SELECTOR, SURFACE_FRAME)
        if len(frames) != 1:
            return False
        d.switch_to.frame(frames[0])
        try:
            body = d.find_element(By.TAG_NAME, "body")
            return all(body.get_attribute(f"data-{k}") == v for k, v in attributes.items())
        finally:
            d.switch_to.default_content()

    return until(driver, looks) is True


def click(driver: WebDriver, frame: WebElement, css: str) -> None:
    driver.switch_to.frame(frame)
    try:
        driver.find_element(By.CSS_SELECTOR, css).click()
    finally:
        driver.switch_to.default_content()


def drag(driver: WebDriver, frame: WebElement, points: list[tuple[int, int]]) -> None:
    """The user's mouse on the board, pressed at the first point (board units), moved
    through the others, released at the last."""
    driver.switch_to.frame(frame)
    try:
        canvas = driver.find_element(By.ID, "board")
        scale = canvas.size["width"] / 1000

        def offset(point: tuple[int, int]) -> tuple[int, int]:
            # Selenium's offsets are from the element's centre, in CSS pixels.
            return round((point[0] - 500) * scale), round((point[1] - 350) * scale)

        actions = ActionChains(driver, duration=20)
        actions.move_to_element_with_offset(canvas, *offset(points[0])).click_and_hold()
        for point in points[1:]:
            actions.move_to_element_with_offset(canvas, *offset(point))
        actions.release().perform()
    finally:
        driver.switch_to.default_content()


def artifact(stack: Stack, reference: dict[str, Any]) -> bytes:
    (row,) = [
        a for a in read_artifacts(stack.data_dir) if a["artifact_id"] == reference["artifact_id"]
    ]
    assert (row["app_scope"], row["size"]) == (SCOPE, reference["size"])
    return (stack.data_dir / "artifacts" / reference["artifact_id"]).read_bytes()


def near(rows: list[bytes], point: tuple[int, int], colour: tuple[int, int, int]) -> bool:
    """A pixel of `colour` within 2 units of `point`."""
    x0, y0 = point
    return any(
        tuple(rows[y][3 * x : 3 * x + 3]) == colour
        for y in range(max(0, y0 - 2), min(len(rows), y0 + 3))
        for x in range(max(0, x0 - 2), x0 + 3)
    )


def check_export(stack: Stack, references: list[dict[str, Any]], stroke: dict[str, Any]) -> None:
    """The export's PNG and SVG hold the rectangle, the text and the user's stroke where
    they are on the board, and nothing where the board is empty."""
    png_ref, svg_ref = references
    assert (png_ref["media_type"], svg_ref["media_type"]) == ("image/png", "image/svg+xml")
    assert stages(stack, "call_export") == ["rendering png", "storing", "rendering svg", "storing"]
    width, height, rows = rgb_rows(artifact(stack, png_ref))
    assert (width, height) == (1000, 700)
    for x, y in stroke["points"]:
        assert near(rows, (x, y), RGB["green"]), (x, y)
    for corner in ((600, 100), (900, 100), (900, 300), (600, 300), (750, 100)):
        assert near(rows, corner, RGB["red"]), corner
    assert near(rows, (100, 100), RGB["blue"])  # the text's box
    assert tuple(rows[650][3 * 950 : 3 * 950 + 3]) == WHITE
    assert tuple(rows[200][3 * 750 : 3 * 750 + 3]) == WHITE  # inside the rectangle
    svg = ET.fromstring(artifact(stack, svg_ref))
    ns = "{http://www.w3.org/2000/svg}"
    (polyline,) = svg.iter(f"{ns}polyline")
    assert polyline.get("stroke") == "#2ca02c"
    assert polyline.get("points") == " ".join(f"{x},{y}" for x, y in stroke["points"])
    rects = [r for r in svg.iter(f"{ns}rect") if r.get("stroke") == "#d62728"]
    assert [(r.get("x"), r.get("y"), r.get("width"), r.get("height")) for r in rects] == [
        ("600", "100", "300", "200")
    ]
    (text,) = svg.iter(f"{ns}text")
    assert (text.text, text.get("fill")) == ("Plan <&> go", "#1f77b4")


EXPORT_ITEM = 'li[data-id="call_export"]'
# What the page's session gets at each address (its cookie goes along): status, the headers
# that say how the browser may treat the bytes, and the bytes' length.
FETCH = """
const done = arguments[arguments.length - 1];
Promise.all(arguments[0].map((path) => fetch(path).then(async (answer) => [
  answer.status, answer.headers.get("content-type"), answer.headers.get("x-content-type-options"),
  answer.headers.get("content-security-policy"), answer.headers.get("content-disposition"),
  (await answer.arrayBuffer()).byteLength]))).then(done);
"""
PICTURE = """
const picture = document.querySelector(arguments[0] + " img.thumb");
return picture && picture.complete
  ? [picture.naturalWidth, picture.alt, new URL(picture.src).pathname] : null;
"""


def save_status(driver: WebDriver) -> str:
    return str(
        driver.execute_script(
            "const s = document.querySelector(arguments[0]); return s ? s.textContent : '';",
            f"{EXPORT_ITEM} .save-status",
        )
    )


async def _the_export_in_the_chat(
    stack: Stack, browser: WebDriver, output: dict[str, Any], downloads: Path
) -> None:
    """The export's PNG as a picture under its call, Saved into the runtime's downloads and
    the browser's with the same bytes; nothing else the page may ask for is served."""
    png, svg = output["artifacts"]
    assert output["artifact"] == png
    width, alt, path = await in_browser(
        until, browser, lambda d: d.execute_script(PICTURE, EXPORT_ITEM)
    )
    assert width == 1000 and alt == png["title"] == "Sprint 12.png"
    assert path == f"/artifact/{CONVERSATION}/{png['artifact_id']}"
    await in_browser(
        browser.execute_cdp_cmd,
        "Browser.setDownloadBehavior",
        {"behavior": "allow", "downloadPath": str(downloads)},
    )
    await in_browser(
        lambda: browser.find_element(By.CSS_SELECTOR, f"{EXPORT_ITEM} .save-row button").click()
    )
    wanted = artifact(stack, png)
    saved = downloads / "Sprint 12.png"
    await wait_for(lambda: saved.exists() and saved.read_bytes() == wanted, 20, "the download")
    assert (stack.data_dir / "downloads" / "Sprint 12.png").read_bytes() == wanted
    assert await in_browser(save_status, browser) == "Saved as “Sprint 12.png”."

    # The page's own session gets the picture by the id it was handed, in its conversation
    # only: not in another, not the SVG no call handed over, not an id it made up, not a path.
    href = await in_browser(
        browser.execute_script,
        "return document.querySelector(arguments[0]).getAttribute('href')",
        f"{EXPORT_ITEM} .save-row a[download]",
    )
    made_up = "art_" + "Z" * 26
    answers = await in_browser(
        browser.execute_async_script,
        FETCH,
        [
            path,
            href,
            f"/artifact/other/{png['artifact_id']}",
            f"/artifact/{CONVERSATION}/{svg['artifact_id']}",
            f"/artifact/{CONVERSATION}/{made_up}",
            f"/artifact/{CONVERSATION}/..%2F..%2Fruntime.db",
            "/saved/made-up",
        ],
    )
    sandboxed = "default-src 'none'; sandbox"
    assert answers[0] == [200, "image/png", "nosniff", sandboxed, None, len(wanted)]
    disposition = "attachment; filename=\"Sprint 12.png\"; filename*=UTF-8''Sprint%2012.png"
    assert answers[1] == [200, "application/octet-stream", "nosniff", sandboxed, disposition,
                          len(wanted)]  # fmt: skip
    assert [a[0] for a in answers[2:]] == [404] * 5, answers
    assert all(a[3] == sandboxed for a in answers), answers
    # Without the page's cookie, nothing.
    origin = str(browser.current_url).split("/?", 1)[0]
    assert (await trio.to_thread.run_sync(fetch, origin + path))[0] == 403


def one_final(stack: Stack, call_id: str) -> dict[str, Any]:
    (final,) = finals(stack, call_id)
    return final


async def _full_screen_and_back(browser: WebDriver, frame: WebElement) -> None:
    """The board asks for the whole window: the page gives it and says so; the page's
    button gives the window back, and the board hears it is on the stage again. Escape
    pressed while the person draws (the keys go to the board's frame, not the page) gives
    it back too."""
    for leave in (_leave_by_the_button, _leave_by_escape_in_the_board):
        asked = await in_browser(ask_display, browser, frame, "fullscreen")
        assert asked == {"mode": "fullscreen"}
        box = await in_browser(
            browser.execute_script,
            "const b = document.querySelector('#surface-slot iframe').getBoundingClientRect();"
            "return [b.left, b.width, innerWidth, document.querySelector('.side').offsetParent];",
        )
        assert box[0] == 0 and box[1] == box[2] and box[3] is None, box
        await in_browser(leave, browser, frame)
        assert await in_browser(
            until,
            browser,
            lambda d: _in_frame_script(d, frame, "return lineup.display.mode();") == "stage",
        )
        shown = await in_browser(browser.execute_script, "return document.body.dataset.display")
        assert shown == "", leave


def _leave_by_the_button(driver: WebDriver, frame: WebElement) -> None:
    driver.find_element(By.ID, "stage-leave").click()


def _leave_by_escape_in_the_board(driver: WebDriver, frame: WebElement) -> None:
    driver.switch_to.frame(frame)
    try:
        driver.execute_script("window.focus();")  # as after a stroke: the board has the keys
        assert driver.execute_script("return document.hasFocus();")
        ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    finally:
        driver.switch_to.default_content()


def _in_frame_script(driver: WebDriver, frame: WebElement, script: str) -> Any:
    driver.switch_to.frame(frame)
    try:
        return driver.execute_script(script)
    finally:
        driver.switch_to.default_content()


async def test_whiteboard_from_install_to_removal(
    stack: Stack, browser: WebDriver, whiteboard: SignedApp, tmp_path: Path
) -> None:
    agent = await installed(stack, whiteboard, browser)
    chat = await wait_foreground(stack, "chat:")

    # The agent's call launches the board in front of the chat, where it stays.
    instance = await create(agent, "call_create", "Sprint 12")
    assert focus_stack(stack)[-2:] == [chat, instance]
    frame = await in_browser(surface_frame, browser, SCOPE)
    assert await in_browser(inside, browser, frame, "ready") == "true"

    # The agent draws two shapes; the user draws a green stroke with the mouse.
    await patch(agent, instance, {"shapes": {"agent-rect": RECT, "agent-text": TEXT}})
    assert await in_browser(shown, browser, frame, "shapes", "2")
    await in_browser(click, browser, frame, '#palette button[data-colour="green"]')
    assert await in_browser(inside, browser, frame, "colour") == "green"
    assert await in_browser(inside, browser, frame, "tool") == "pen"
    stroke_path = [(150, 450), (220, 500), (300, 560), (400, 600), (480, 610)]
    await in_browser(drag, browser, frame, stroke_path)
    assert await in_browser(shown, browser, frame, "shapes", "3")
    data, revision = board(stack, instance)
    assert data["order"][:2] == ["agent-rect", "agent-text"]
    stroke = data["shapes"][data["order"][2]]
    assert (stroke["kind"], stroke["colour"]) == ("stroke", "green")
    assert len(stroke["points"]) >= 2
    for drawn, meant in (
        (stroke["points"][0], stroke_path[0]),
        (stroke["points"][-1], stroke_path[-1]),
    ):
        assert abs(drawn[0] - meant[0]) <= 4 and abs(drawn[1] - meant[1]) <= 4, stroke

    await _full_screen_and_back(browser, frame)
    row = await agent.call("call_summary", "board.summary")
    assert row["state"] == "succeeded", row
    summary = row["output"]
    assert (summary["title"], summary["revision"], summary["shape_count"]) == (
        "Sprint 12",
        revision,
        3,
    )
    assert summary["kinds"] == {"rect": 1, "stroke": 1, "text": 1}
    assert summary["texts"] == ["Plan <&> go"]
    assert "1 stroke" in summary["description"] and "Sprint 12" in summary["description"]

    # The export, in the background: its PNG and SVG hold the three shapes; the board stays
    # in front.
    row = await agent.call("call_export", "board.export")
    assert row["state"] == "succeeded", row
    assert row["output"]["revision"] == revision
    check_export(stack, row["output"]["artifacts"], stroke)
    assert focus_stack(stack)[-2:] == [chat, instance]
    # The board owns the stage, with the agent's shapes, the user's stroke, and in the chat
    # beside it the export's picture and its Save button.
    await in_browser(until, browser, lambda d: d.execute_script(PICTURE, EXPORT_ITEM))
    await owns_the_stage(browser)
    await _the_export_in_the_chat(stack, browser, row["output"], tmp_path)

    # The agent was given exactly one final for each call.
    for call_id in ("call_create", "call_summary", "call_export"):
        assert one_final(stack, call_id)["type"] == "lineup.tool.result"

    # The user closes the board: the chat is in front again.
    await cli(stack, "app", "close", instance)
    assert await wait_foreground(stack, "chat:") == chat

    # Disabled: its tools leave the inventory under a new revision; a late call is refused.
    with_tools = revision_of(stack)
    await cli(stack, "app", "disable", SCOPE)
    disabled = await new_revision(stack, with_tools)
    assert not [m for m in tools_of(stack) if m.startswith("board.")]
    row = await agent.call("call_late", "board.summary", revision=disabled)
    assert (row["state"], row["code"]) == ("failed", "app_disabled"), row
    assert one_final(stack, "call_late")["type"] == "lineup.tool.error"

    # Removed: no bundle, session data or artifact is left; the export's Save says so
    # where the user clicked.
    await remove_confirmed(stack, SCOPE)
    await in_browser(
        lambda: browser.find_element(By.CSS_SELECTOR, f"{EXPORT_ITEM} .save-row button").click()
    )
    gone = "This file is gone: the app that made it was removed."
    assert await in_browser(until, browser, lambda d: save_status(d) == gone)


# The user's pen twice within one moment: the second edit starts from the same revision as
# the first, so one of the two writes loses the race in the store.
TWO_STROKES = """
const board = document.getElementById("board");
const box = board.getBoundingClientRect();
function pointer(type, x, y) {
  board.dispatchEvent(new PointerEvent(type, {
    clientX: box.left + (x * box.width) / 1000, clientY: box.top + (y * box.height) / 700,
    pointerId: 7, isPrimary: true, bubbles: true }));
}
for (const y of [100, 200]) {
  pointer("pointerdown", 100, y);
  pointer("pointermove", 250, y + 20);
  pointer("pointerup", 400, y + 40);
}
"""


# A hostile write through the bridge: two "shapes" that break the contract on top.
JUNK = """
lineup.session.get().then((snapshot) => {
  const board = snapshot.data;
  board.shapes.blob = { kind: "blob", colour: "red", points: [[1, 1], [2, 2]] };
  board.shapes.far = { kind: "line", colour: "red", points: [[0, 0], [99999, 5]] };
  board.order.push("blob", "far");
  return lineup.session.replace(board, snapshot.revision);
});
"""


def junk(driver: WebDriver, frame: WebElement) -> None:
    driver.switch_to.frame(frame)
    try:
        driver.execute_script(JUNK)
    finally:
        driver.switch_to.default_content()


def two_strokes(driver: WebDriver, frame: WebElement) -> None:
    driver.switch_to.frame(frame)
    try:
        driver.execute_script(TWO_STROKES)
    finally:
        driver.switch_to.default_content()


async def test_two_pages_of_one_board_lose_no_write(
    stack: Stack, browser: WebDriver, whiteboard: SignedApp
) -> None:
    agent = await installed(stack, whiteboard, browser)
    instance = await create(agent, "call_create", "Together")
    first = await in_browser(surface_frame, browser, SCOPE)
    assert await in_browser(inside, browser, first, "ready") == "true"
    page_one = browser.current_window_handle
    await in_browser(browser.switch_to.new_window, "window")
    try:
        await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
        second = await in_browser(surface_frame, browser, SCOPE)
        assert await in_browser(inside, browser, second, "ready") == "true"
        await in_browser(click, browser, second, '#tools button[data-tool="ellipse"]')
        await in_browser(drag, browser, second, [(600, 200), (700, 300), (800, 400)])
        assert await in_browser(shown, browser, second, "shapes", "1")
        await in_browser(click, browser, second, '#tools button[data-tool="pen"]')
        await in_browser(two_strokes, browser, second)
        assert await in_browser(shown, browser, second, "shapes", "3")
        # One write lost its race and was made again on the newer board.
        assert int(await in_browser(inside, browser, second, "conflicts")) >= 1
        await in_browser(browser.close)
    finally:
        await in_browser(browser.switch_to.window, page_one)
    # The first page was shown every revision; its own shape joins the others.
    assert await in_browser(shown, browser, first, "shapes", "3")
    await in_browser(click, browser, first, '#tools button[data-tool="rect"]')
    await in_browser(drag, browser, first, [(50, 500), (200, 650)])
    assert await in_browser(shown, browser, first, "shapes", "4")

    data, revision = board(stack, instance)
    kinds = [data["shapes"][shape_id]["kind"] for shape_id in data["order"]]
    assert kinds == ["ellipse", "stroke", "stroke", "rect"], data
    assert len(set(data["order"])) == 4 and revision >= 5  # created, then four writes
    row = await agent.call("call_summary", "board.summary")
    assert row["output"]["shape_count"] == 4 and row["output"]["revision"] == revision

    # A surface is untrusted: what it writes that is not a shape is neither drawn by the
    # pages nor counted or exported by the app.
    await in_browser(junk, browser, first)
    assert await in_browser(shown, browser, first, "revision", str(revision + 1))
    assert await in_browser(inside, browser, first, "shapes") == "4"
    row = await agent.call("call_after_junk", "board.summary")
    assert row["output"]["shape_count"] == 4 and row["output"]["revision"] == revision + 1


def refusal(stack: Stack, message_id: str) -> dict[str, Any] | None:
    """The app's diagnostics event for a patch it refused."""
    events = read_diagnostics(stack.data_dir, recent=20).get(SCOPE, {}).get("recent", [])
    return next(
        (
            e
            for e in events
            if e["name"] == "patch_refused" and e["fields"]["message_id"] == message_id
        ),
        None,
    )


def rejection(stack: Stack, message_id: str) -> str | None:
    """The text of the runtime's answer to an agent message it refused."""
    return next(
        (
            str(env["payload"]["text"])
            for env in sent(stack, "lineup.message")
            if (env.get("correlation") or {}).get("reply_to") == message_id
        ),
        None,
    )


def stages(stack: Stack, call_id: str) -> list[str]:
    """The stages of a call's progress, as the agent was told them."""
    return [
        str(p["payload"].get("stage"))
        for p in sent(stack, "lineup.tool.progress")
        if p["correlation"]["call_id"] == call_id
    ]


def big_board(count: int) -> dict[str, Any]:
    """`count` thick wandering strokes of 200 points: a board that takes seconds to draw."""
    chance = random.Random(7)
    shapes = {}
    for n in range(count):
        x, y, points = 500, 350, []
        for _ in range(200):
            x = min(1000, max(0, x + chance.randint(-60, 60)))
            y = min(700, max(0, y + chance.randint(-60, 60)))
            points.append([x, y])
        shapes[f"big-{n}"] = {"kind": "stroke", "colour": "purple", "points": points, "width": 20}
    return shapes


async def test_an_export_outlives_kills_and_the_board_refuses_what_breaks_it(
    stack: Stack, browser: WebDriver, whiteboard: SignedApp
) -> None:
    agent = await installed(stack, whiteboard, browser)
    chat = await wait_foreground(stack, "chat:")
    instance = await create(agent, "call_create", "Kills")
    created = board(stack, instance)

    # A patch with a shape that breaks the contract changes nothing, the good shape beside
    # it neither: the app says why in its diagnostics, with the code.
    evil = {"kind": "stroke", "colour": "pink", "points": [[0, 0], [5000, 9]]}
    bad = await patch(agent, instance, {"shapes": {"fine": RECT, "evil": evil}})
    event = await wait_for(lambda: refusal(stack, bad), 20, "the app's refusal")
    assert event["fields"]["code"] == "invalid_payload" and "evil" in event["fields"]["detail"]
    # A patch aimed at another app's instance is refused at the door (its scope is not the
    # instance's app); one aimed at a board that is not live is refused by the router.
    forged = agent.client.envelope(
        "lineup.app.state.patch",
        CONVERSATION,
        {"patch": {"shapes": {"stray": RECT}}},
        app_scope=SCOPE,
        instance_id=instance,
    )
    forged["target"]["instance_id"] = forged["scope"]["instance_id"] = chat
    verdict = await agent.client.submit(forged)
    assert (verdict.status, verdict.code) == ("rejected", "scope_mismatch"), verdict
    elsewhere = await patch(agent, f"{SCOPE}:elsewhere", {"shapes": {"stray": RECT}})
    text = await wait_for(lambda: rejection(stack, elsewhere), 20, "the router's answer")
    assert text.startswith("ownership_mismatch"), text
    assert board(stack, instance) == created

    # A board that takes seconds to render, then three exports, each with a kill while it
    # renders: the app's process, the tool router, the web host.
    shapes = big_board(30)
    await patch(agent, instance, {"shapes": shapes})
    await wait_for(lambda: len(board(stack, instance)[0]["order"]) == 30, 30, "the big board")
    data, revision = board(stack, instance)
    assert data["shapes"] == shapes and data["order"] == list(shapes)
    for n, actor in enumerate(("app.whiteboard", "tool_router", "web_host")):
        call_id = f"call_export_{n}"
        await agent.client.submit(agent.invoke(call_id, "board.export", {"formats": ["png"]}))
        await wait_for(lambda c=call_id: stages(stack, c), 30, "the export under way")
        assert call_row(stack, call_id)["state"] not in ("succeeded", "failed")
        assert stack.kill(actor)
        row = await final_of(stack, call_id, timeout=60)
        assert (row["state"], row["output"]["revision"]) == ("succeeded", revision), row
        assert one_final(stack, call_id)["type"] == "lineup.tool.result"
        (reference,) = row["output"]["artifacts"]
        width, height, rows = rgb_rows(artifact(stack, reference))
        assert (width, height) == (1000, 700)
        assert near(rows, tuple(shapes["big-0"]["points"][50]), (0x94, 0x67, 0xBD))
    # The export the app's kill cut short ran again from its start, and asked for the same
    # artifact: one per export.
    assert stages(stack, "call_export_0") == ["rendering png", "rendering png", "storing"]
    assert len([a for a in read_artifacts(stack.data_dir) if a["app_scope"] == SCOPE]) == 3
    assert board(stack, instance) == (data, revision)
    # The page, framed anew by the restarted web host, shows the committed board.
    wanted = {"revision": str(revision), "shapes": "30"}
    assert await in_browser(framed_anew_shows, browser, wanted)


def test_the_board_holds_shapes_to_their_contract() -> None:
    """Each rule of a shape refuses with `invalid_payload`; a refused patch merges nothing;
    a board read back from session data keeps only the shapes that keep the contract."""
    stroke = {"kind": "stroke", "colour": "red", "points": [[0, 0], [1000, 700]]}
    broken = [
        {**stroke, "kind": "blob"},
        {**stroke, "colour": "pink"},
        {**stroke, "points": [[0, 0]]},
        {**stroke, "points": [[0, 0], [1001, 0]]},
        {**stroke, "points": [[0, 0], [0, -1]]},
        {**stroke, "points": [[0, 0], [True, 1]]},
        {**stroke, "points": [[0, 0] for _ in range(501)]},
        {**stroke, "width": 0},
        {**stroke, "width": 21},
        {**stroke, "text": "only a text has one"},
        {**stroke, "fill": "red"},
        {"kind": "rect", "colour": "red", "points": [[0, 0], [1, 1], [2, 2]]},
        {"kind": "text", "colour": "red", "points": [[0, 0]]},
        {"kind": "text", "colour": "red", "points": [[0, 0]], "text": "x" * 201},
    ]
    for shape in broken:
        with pytest.raises(ContractError) as refused:
            check_shape(shape)
        assert refused.value.code == Code.INVALID_PAYLOAD, shape
    assert check_shape({**stroke, "width": 20}) == {**stroke, "width": 20}

    board = merge(empty_board("T"), {"shapes": {"a": stroke, "b": TEXT}})
    assert board["order"] == ["a", "b"]
    for patch in (
        {"shapes": {"c": RECT, "d": broken[0]}},
        {"shapes": {"bad id!": RECT}},
        {"shapes": [RECT]},
        {"title": ""},
        {"colour": "red"},
    ):
        with pytest.raises(ContractError) as refused:
            merge(board, patch)
        assert refused.value.code == Code.INVALID_PAYLOAD, patch
    moved = merge(board, {"title": "U", "shapes": {"a": None, "c": RECT, "b": RECT}})
    assert (moved["title"], moved["order"], moved["shapes"]["b"]) == ("U", ["b", "c"], RECT)

    kept = {
        "title": 5,
        "shapes": {**board["shapes"], "x": broken[1]},
        "order": ["x", "b", "a", "b", 7],
    }
    assert board_of(kept) == {
        "title": "Whiteboard",
        "shapes": {"b": TEXT, "a": stroke},
        "order": ["b", "a"],
    }


CARD = "#timeline .kind-interaction:has(.card.consent)"  # the card and its item's head


def _consent_card_in_view(driver: WebDriver) -> bool:
    """The consent card shown; on a phone, where the board in front hides the chat, the
    chat is brought up first, as a person would."""
    card = driver.find_element(By.CSS_SELECTOR, "#timeline .card.consent")
    if not card.is_displayed() and driver.find_element(By.ID, "dock-toggle").is_displayed():
        driver.find_element(By.ID, "dock-toggle").click()
    return bool(card.is_displayed())


def _allow_once(driver: WebDriver) -> None:
    card = driver.find_element(By.CSS_SELECTOR, CARD)
    button = next(b for b in card.find_elements(By.TAG_NAME, "button") if b.text == "Allow once")
    button.click()


async def test_saving_the_board_asks_the_user_each_time(
    stack: Stack, whiteboard: SignedApp, browser: WebDriver
) -> None:
    await start_web_runtime(stack)
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    await install_enabled(stack, whiteboard)
    await new_revision(stack, first)
    assert sorted(m for m in tools_of(stack) if m.startswith("board.")) == TOOLS
    agent = Agent(stack, client, SCOPE)
    instance = await create(agent, "call_create", "Plan/B")
    await patch(agent, instance, {"shapes": {"agent-rect": RECT}})
    downloads = stack.data_dir / "downloads"

    # The card in the page has no serious accessibility violation, at a desktop's size and
    # a phone's (the rest of the page is the accessibility test's); the user allows it once
    # there: the PNG is in their downloads, named after the board.
    await client.submit(agent.invoke("call_save", "board.save", {"format": "png"}))
    card = await card_for(stack, "file.save")
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    assert await in_browser(
        violations_at_sizes, browser, axe_source(), _consent_card_in_view, "consent", CARD
    ) == {"1280x800": [], "390x844": []}
    await in_browser(until, browser, _consent_card_in_view)
    await in_browser(_allow_once, browser)
    row = await final_of(stack, "call_save", 60)
    assert row["state"] == "succeeded", (row["code"], row["history"])
    assert row["output"] == {"saved": True, "name": "Plan-B.png"}
    assert one_final(stack, "call_save")["type"] == "lineup.tool.result"
    assert sorted(p.name for p in downloads.iterdir()) == ["Plan-B.png"]
    assert (downloads / "Plan-B.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")

    # Once covers nothing more: the next save asks again, and the user denies it.
    await client.submit(agent.invoke("call_again", "board.save", {"format": "png"}))
    denied = await card_for(stack, "file.save", {card})
    answer(stack, denied, "deny")
    row = await final_of(stack, "call_again", 60)
    assert (row["state"], row["code"]) == ("failed", "permission_denied"), row["history"]
    assert one_final(stack, "call_again")["type"] == "lineup.tool.error"
    assert sorted(p.name for p in downloads.iterdir()) == ["Plan-B.png"]

    # The app killed while the user looks at the card: the save runs again and asks with
    # the same request, so no second card comes, and the user's answer ends the call.
    await client.submit(agent.invoke("call_killed", "board.save", {"format": "png"}))
    open_card = await card_for(stack, "file.save", {card, denied})
    await killed_and_back(stack, "app.whiteboard")
    answer(stack, open_card, "once")
    row = await final_of(stack, "call_killed", 60)
    assert row["state"] == "succeeded", (row["code"], row["history"])
    assert row["output"] == {"saved": True, "name": "Plan-B (1).png"}
    assert one_final(stack, "call_killed")["type"] == "lineup.tool.result"
    assert sorted(p.name for p in downloads.iterdir()) == ["Plan-B (1).png", "Plan-B.png"]
    assert not [c for c in cards(stack) if c["capability"] == "file.save"], "a card left open"
