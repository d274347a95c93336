"""A tool declared `delivery: surface_bridge`, called by the agent and answered by its app's
surface in a real headless Chromium, on a real runtime and AppServer.

The canvas's `board.clear` is handed by the app's process to its surface, whose answer ends
the call once (the AppServer's own record has one final): an output that fits (called
before any page shows the surface: the call waits for one), one that breaks the schema
(`handler_failed`), and ones held until a reload, then a web host SIGKILLed, offers the
call again under the same call id. The trojan's surface answers for another instance, a
made-up call id, another app's call id and its own call twice: the page relays its one
answer only, counting the others, and the web host refuses such answers past the page. The
trojan hands over "PNG" artifacts that are an HTML page and an SVG with scripts: the chat
shows their lines and Save with no picture, and opened as addresses they are never a
document and run nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from selenium.webdriver.chrome.webdriver import WebDriver

from tests.runtime.helpers import Stack, wait_for
from tests.tools.helpers import Agent, call_row, final_of, new_revision, stream_finals

from .conftest import appserver_messages, in_browser, open_page, start_web_runtime, until
from .test_surfaces import (
    ATTACK_DROPS,
    CONVERSATION,
    DIRECT,
    SURFACE_FRAME,
    bundles,
    forged_drops,
    inside,
    install,
    page_counters,
    surface_frame,
    web_statistics,
)

__all__ = ["bundles"]

SOURCE = "const f = document.querySelector(arguments[0]); return f ? f.src : null;"
# What the chat shows of the artifact a call handed over, once its picture (if asked for)
# has loaded, or has failed and been dropped.
SHOWN = """
const box = document.querySelector(`li[data-id="call_${arguments[0]}"] .artifact`);
const picture = box && box.querySelector("img");
if (!box || (picture && !(picture.complete && picture.naturalWidth > 0))) return null;
return {label: Boolean(box.querySelector(".artifact-label")),
        save: Boolean(box.querySelector(".save-row button")), picture: Boolean(picture)};
"""
STATUSES = """
const done = arguments[arguments.length - 1];
Promise.all(arguments[0].map((path) => fetch(path).then((answer) => [answer.status,
  answer.headers.get("content-type"), answer.headers.get("content-security-policy")])))
  .then(done);
"""


async def agent_with(stack: Stack, bundles: dict[str, Path], scope: str) -> Agent:
    """The runtime with its web host, the agent in the conversation, and `scope` installed,
    launched in it and its tools in the agent's inventory."""
    await start_web_runtime(stack)
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    await install(stack, bundles, scope)
    await new_revision(stack, first)
    return Agent(stack, client, scope)


def error_code(stack: Stack, call_id: str) -> str:
    """The code of the call's error as the AppServer recorded it."""
    (error,) = [
        envelope
        for envelope in appserver_messages(stack, "lineup.tool.error")
        if envelope["correlation"]["call_id"] == call_id
    ]
    return str(error["payload"]["code"])


async def test_the_surface_answers_its_apps_tool_calls_once(
    stack: Stack, browser: WebDriver, bundles: dict[str, Path]
) -> None:
    agent = await agent_with(stack, bundles, "canvas")
    # No page shows the surface yet: the call, handed to the web host, waits for one.
    await agent.client.submit(agent.invoke("call_fits", "board.clear", {"answer": "fits"}))
    await wait_for(
        lambda: web_statistics(stack).get("tool_calls_offered") == 1, 10, "the call handed"
    )
    # Nothing of it is kept while no surface of its instance is shown: the surface that
    # opens is given the app's own record of its open calls.
    assert web_statistics(stack)["calls_kept"] == 0
    assert call_row(stack, "call_fits")["state"] not in ("succeeded", "failed")
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    frame = await in_browser(surface_frame, browser, "canvas")
    instance = str(frame.get_attribute("src")).rsplit("#", 1)[1]
    assert await in_browser(inside, browser, frame, "visits") == "1"

    row = await final_of(stack, "call_fits")
    assert (row["state"], row["output"]) == ("succeeded", {"cleared": 5, "visits": 1}), row
    assert any(h["event"] == "progress" for h in row["history"]), row["history"]

    # An output that breaks the tool's schema is the app's failure, never the agent's result.
    row = await agent.call("call_off", "board.clear", arguments={"answer": "off_schema"})
    assert (row["state"], row["code"]) == ("failed", "handler_failed"), row

    # Held by the surface, the call outlives a reload: offered again under its call id, the
    # surface shown anew answers it.
    held = {"answer": "fits", "hold_until_visit": 2}
    await agent.client.submit(agent.invoke("call_reload", "board.clear", held))
    await in_browser(until, browser, lambda d: "call_reload" in inside(d, frame, "calls"))
    await in_browser(browser.refresh)
    frame = await in_browser(surface_frame, browser, "canvas")
    assert await in_browser(inside, browser, frame, "calls") == "call_reload"
    row = await final_of(stack, "call_reload")
    assert (row["state"], row["output"]) == ("succeeded", {"cleared": 5, "visits": 2}), row

    # And a web host SIGKILLed mid-call: restarted, it asks the app for its open calls.
    held = {"answer": "fits", "hold_until_visit": 3}
    await agent.client.submit(agent.invoke("call_killed", "board.clear", held))
    await in_browser(until, browser, lambda d: "call_killed" in inside(d, frame, "calls"))
    old_src = str(frame.get_attribute("src"))
    assert stack.kill("web_host")
    await in_browser(
        until, browser, lambda d: d.execute_script(SOURCE, SURFACE_FRAME) not in (None, old_src)
    )
    frame = await in_browser(surface_frame, browser, "canvas")
    assert await in_browser(inside, browser, frame, "calls") == "call_killed"
    row = await final_of(stack, "call_killed")
    assert (row["state"], row["output"]) == ("succeeded", {"cleared": 5, "visits": 3}), row

    # The agent was given exactly one final for each call (the AppServer's own record).
    finals = await wait_for(
        lambda: f if len(f := stream_finals(stack)) == 4 else None, 10, "four finals"
    )
    assert finals == {
        "call_fits": ["lineup.tool.result"],
        "call_off": ["lineup.tool.error"],
        "call_reload": ["lineup.tool.result"],
        "call_killed": ["lineup.tool.result"],
    }
    assert error_code(stack, "call_off") == "handler_failed"
    assert page_counters(browser)["dropped"] == {}

    # Past the page, the web host takes no answer to a call that is not open on this
    # instance: one ended already, or one never made.
    forged = [
        json.dumps(
            {
                "v": 1,
                "id": f"f{n}",
                "instance_id": instance,
                "type": "tool.result",
                "call_id": call_id,
                "output": {"cleared": 0, "visits": 0},
            }
        )
        for n, call_id in enumerate(("call_fits", "call_made_up"))
    ]
    codes = await in_browser(browser.execute_async_script, DIRECT, instance, forged)
    assert codes == ["ownership_mismatch", "ownership_mismatch"]
    assert stream_finals(stack) == finals


async def test_a_hostile_surface_answers_only_its_own_call_once(
    stack: Stack, browser: WebDriver, bundles: dict[str, Path]
) -> None:
    app_dir = stack.data_dir / "apps" / "trojan"
    app_dir.mkdir(parents=True, exist_ok=True)
    (app_dir / "orders.json").write_text(json.dumps({"listener_port": 9}))
    agent = await agent_with(stack, bundles, "trojan")
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    frame = await in_browser(surface_frame, browser, "trojan")
    assert await in_browser(inside, browser, frame, "done") == "1"
    counters = await in_browser(
        until,
        browser,
        lambda d: (
            (c := forged_drops(page_counters(d)["dropped"]))
            and sum(c.values()) >= sum(ATTACK_DROPS.values())
            and c
        ),
    )
    assert counters == ATTACK_DROPS

    # Another app's call id, as the trojan might have learnt it.
    arguments = {"foreign_call_id": "call_of_the_canvas"}
    row = await agent.call("call_grab", "trojan.grab", arguments=arguments)
    assert (row["state"], row["output"]) == ("succeeded", {"grabbed": True}), row
    assert await in_browser(inside, browser, frame, "grabbed") == "call_grab"

    # Another instance's answer, a made-up call, another app's call, its own a second time.
    dropped = {**ATTACK_DROPS, "scope_mismatch": 2, "unknown_call": 3}
    await in_browser(until, browser, lambda d: forged_drops(page_counters(d)["dropped"]) == dropped)
    await wait_for(
        lambda: forged_drops(web_statistics(stack).get("page_dropped") or {}) == dropped,
        10,
        "the page's drops in the web host's statistics",
    )
    assert stream_finals(stack) == {"call_grab": ["lineup.tool.result"]}

    # Documents with a script that say they are PNGs: no picture in the chat, only the line
    # and Save; their address answers 415 as text, and opened in a tab runs nothing.
    paths = []
    for kind in ("html", "svg"):
        row = await agent.call(f"call_{kind}", "trojan.picture", arguments={"kind": kind})
        assert row["state"] == "succeeded", row
        reference = row["output"]["artifact"]
        assert (reference["media_type"], reference["title"]) == ("image/png", f"{kind}.png")
        shown = await in_browser(until, browser, lambda d, k=kind: d.execute_script(SHOWN, k))
        assert shown == {"label": True, "save": True, "picture": False}, shown
        paths.append(f"/artifact/{CONVERSATION}/{reference['artifact_id']}")
    answers = await in_browser(browser.execute_async_script, STATUSES, paths)
    assert answers == [[415, "text/plain; charset=utf-8", "default-src 'none'; sandbox"]] * 2
    page = browser.current_window_handle
    origin = str(browser.current_url).split("/?", 1)[0]
    await in_browser(browser.switch_to.new_window, "tab")
    try:
        for path in paths:
            await in_browser(browser.get, origin + path)
            opened = await in_browser(
                browser.execute_script, "return [document.contentType, document.title]"
            )
            assert opened == ["text/plain", ""], opened
        await in_browser(browser.close)
    finally:
        await in_browser(browser.switch_to.window, page)
