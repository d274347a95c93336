"""The chat and the app registry in a real browser, against a real runtime and AppServer:
what the agent says appears (its Markdown made safe), the user's answers and messages
reach the agent exactly once (the AppServer's own record says so), also when typed while
the AppServer is down or while the web host restarts after a SIGKILL, and the page keeps
the same timeline across that restart; once the runtime is stopped, the page says so at
once. The page's timeline lays its items out in blocks of fifty, in their order."""

from __future__ import annotations

import os
import shutil
import signal
from functools import partial
from pathlib import Path
from typing import Any

import trio
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from actors.app_manager.registry import read_apps
from actors.web_host import endpoint_listening, read_endpoint
from lineup.cli import main
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .conftest import (
    appserver_messages,
    connection_state,
    in_browser,
    open_page,
    save_screenshot,
    shown_items,
    start_web_runtime,
    until,
)

# How long the page reconnects in vain before it says, unasked, that the runtime stopped.
GIVE_UP_S = 20
MARKDOWN = (
    "**Plan** for today, see [the notes](https://example.org/notes?a=1).\n\n"
    "- <b>not bold</b> <img src=x onerror=alert(1)>\n"
    "- `code` and [a trap](javascript:alert(1))\n"
)


def _item(driver: WebDriver, item_id: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f'#timeline li[data-id="{item_id}"]')


def _press(driver: WebDriver, item_id: str, label: str, *, keyboard: bool = False) -> None:
    """Press the card's button `label`: with the mouse, or with the keyboard (Enter)."""

    def pressed(d: WebDriver) -> bool:
        for candidate in _item(d, item_id).find_elements(By.CSS_SELECTOR, ".card button"):
            if candidate.text == label and candidate.is_enabled():
                if keyboard:
                    candidate.send_keys(Keys.ENTER)
                else:
                    candidate.click()
                return True
        return False

    until(driver, pressed)


def _type_answer(driver: WebDriver, item_id: str, text: str) -> None:
    def typed(d: WebDriver) -> bool:
        _item(d, item_id).find_element(By.CSS_SELECTOR, ".card input").send_keys(text + "\n")
        return True

    until(driver, typed)


def _type_message(driver: WebDriver, text: str) -> None:
    driver.find_element(By.ID, "composer-text").send_keys(text + "\n")


def _user_texts(stack: Stack) -> list[str]:
    return [
        m["payload"]["text"]
        for m in appserver_messages(stack, "lineup.message")
        if m["sender"]["kind"] == "user"
    ]


def _settled(driver: WebDriver) -> list[tuple[str, str, str]] | None:
    """The timeline once nothing in it waits for a verdict and nothing is queued."""
    items = shown_items(driver)
    queued = driver.find_elements(By.CSS_SELECTOR, "#queued > li")
    if queued or any(state == "pending" for _, state, _ in items):
        return None
    return items


def _fits(driver: WebDriver, width: int) -> bool:
    driver.set_window_size(width, 900)
    return bool(
        driver.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth"
            " && window.innerWidth <= arguments[0]",
            width,
        )
    )


def _assert_safe_markdown(shown: Any) -> None:
    """`MARKDOWN` as the page shows it: a link with its address, opened only by a click in
    a new tab without an opener; raw HTML and a javascript: link only as text."""
    link = shown.find_element(By.CSS_SELECTOR, ".md a")
    assert link.get_attribute("href") == "https://example.org/notes?a=1"
    assert (link.get_attribute("rel"), link.get_attribute("target")) == (
        "noopener noreferrer",
        "_blank",
    )
    assert "the notes (https://example.org/notes?a=1)" in shown.text
    assert "<b>not bold</b> <img src=x onerror=alert(1)>" in shown.text
    assert "[a trap](javascript:alert(1))" in shown.text
    assert shown.find_elements(By.CSS_SELECTOR, "b, img, script, iframe") == []
    assert len(shown.find_elements(By.CSS_SELECTOR, "a")) == 1


async def test_the_agent_and_the_user_meet_in_the_page_once_also_across_a_kill(
    stack: Stack, browser: WebDriver, tmp_path: Path
) -> None:
    await start_web_runtime(stack)
    agent = await stack.start_agent()
    said = await agent.send_markdown(CONVERSATION, MARKDOWN)
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)

    # The agent's Markdown, made safe.
    shown = await in_browser(until, browser, lambda d: _item(d, said.message_id))
    await in_browser(_assert_safe_markdown, shown)

    # A task's progress, as a line with its bar.
    await agent.send_task_progress(CONVERSATION, "build", "running", percent=40, label="compiling")
    task = await in_browser(
        until, browser, lambda d: d.find_element(By.CSS_SELECTOR, "#task-list li.task-running")
    )
    assert (await in_browser(lambda: task.text)).startswith("build — compiling")
    bar = await in_browser(task.find_element, By.TAG_NAME, "progress")
    assert await in_browser(bar.get_attribute, "value") == "40"

    # A choice, a confirm and an input, answered in the page.
    choice = await agent.ask_choice(
        CONVERSATION, "Which colour?", {"red": "Red", "green": "Green"}, interaction_id="colour"
    )
    confirm = await agent.ask_confirm(
        CONVERSATION, "Ship it?", confirm_label="Ship", cancel_label="Wait", interaction_id="ship"
    )
    asked = await agent.ask_input(
        CONVERSATION, "Release name?", placeholder="Sprint 12", interaction_id="name"
    )
    await in_browser(_press, browser, choice.message_id, "Green")
    await in_browser(partial(_press, keyboard=True), browser, confirm.message_id, "Ship")
    await in_browser(_type_answer, browser, asked.message_id, "Orion")

    def answers() -> dict[str, list[dict[str, Any]]] | None:
        found: dict[str, list[dict[str, Any]]] = {}
        for message in appserver_messages(stack, "lineup.interaction.response"):
            found.setdefault(message["payload"]["interaction_id"], []).append(message["payload"])
        return found if len(found) == 3 else None

    await wait_for(answers, 30, "the three answers at the AppServer")
    asks = (choice.message_id, confirm.message_id, asked.message_id)

    def answered(d: WebDriver) -> bool:
        return _settled(d) is not None and all("answered" in _item(d, m).text for m in asks)

    await in_browser(until, browser, answered)
    received = answers() or {}  # settled: nothing more may come
    assert [len(received[key]) for key in ("colour", "ship", "name")] == [1, 1, 1]
    assert received["colour"][0]["selected"] == ["green"]
    assert received["ship"][0]["confirmed"] is True
    assert received["name"][0]["text"] == "Orion"

    # Readable at 1400 and at 400 px wide: nothing wider than the window; saved, drawn.
    for width in (1400, 400):
        assert await in_browser(_fits, browser, width), width
        colours = await in_browser(save_screenshot, browser, tmp_path / f"chat-{width}.png")
        assert colours > 20, f"the {width} px screenshot looks blank ({colours} colours)"
    await in_browser(browser.set_window_size, 1400, 900)

    # SIGKILL the web host mid-session, and type at once: the page reconnects to the
    # restarted web host, shows the same timeline, and what was typed goes out once.
    before = await in_browser(until, browser, _settled)
    killed = read_endpoint(stack.data_dir)
    assert killed is not None and stack.kill("web_host")
    await in_browser(_type_message, browser, "typed while it restarts")
    restarted = await wait_for(
        lambda: (
            (e := read_endpoint(stack.data_dir))
            and e["pid"] != killed["pid"]
            and endpoint_listening(e)
            and e
        ),
        30,
        "the web host to restart",
    )
    assert restarted["port"] == killed["port"]
    await wait_for(
        lambda: _user_texts(stack).count("typed while it restarts") >= 1, 30, "the typed message"
    )
    await agent.send_text(CONVERSATION, "after the restart")
    await in_browser(
        until, browser, lambda d: any("after the restart" in text for *_, text in shown_items(d))
    )
    after = await in_browser(until, browser, _settled)
    assert await in_browser(connection_state, browser) == "online"
    assert after[: len(before)] == before
    assert [text.splitlines()[-1] for *_, text in after[len(before) :]] == [
        "typed while it restarts",
        "after the restart",
    ]
    assert len({item_id for item_id, *_ in after}) == len(after)
    assert _user_texts(stack).count("typed while it restarts") == 1


def _network(driver: WebDriver, *, offline: bool) -> None:
    """Cut the browser off from every address, loopback included (DevTools' emulation)."""
    driver.execute_cdp_cmd("Network.enable", {})
    conditions = {"offline": offline, "latency": 0, "downloadThroughput": -1}
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions", {**conditions, "uploadThroughput": -1}
    )


async def test_what_is_typed_while_the_page_is_cut_off_waits_in_it_and_goes_out_once(
    stack: Stack, browser: WebDriver
) -> None:
    await start_web_runtime(stack)
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    before = await in_browser(until, browser, lambda d: len(shown_items(d)) == 1 and _settled(d))

    # The browser cut off, its socket gone with the web host: it reconnects in vain.
    await in_browser(partial(_network, offline=True), browser)
    try:
        assert stack.kill("web_host")
        await in_browser(until, browser, lambda d: connection_state(d) == "reconnecting")
        await in_browser(_type_message, browser, "typed while cut off")

        def queued(d: WebDriver) -> list[str]:
            return [li.text for li in d.find_elements(By.CSS_SELECTOR, "#queued > li")]

        assert await in_browser(until, browser, queued) == ["you\npending\ntyped while cut off"]
        assert _user_texts(stack) == []
        assert await in_browser(connection_state, browser) == "reconnecting"
    finally:
        await in_browser(partial(_network, offline=False), browser)

    # Back: the page resyncs from where it was, then sends what waited, once.
    await in_browser(until, browser, lambda d: connection_state(d) == "online")
    await wait_for(lambda: _user_texts(stack) == ["typed while cut off"], 30, "the message")
    after = await in_browser(until, browser, lambda d: len(shown_items(d)) == 2 and _settled(d))
    assert after[:1] == before
    assert after[1][2].splitlines()[-1] == "typed while cut off"
    assert _user_texts(stack) == ["typed while cut off"]

    # The runtime stopped with `lineup stop`: the web host tells the page, which says so in
    # one line with what to run, well before it would give up reconnecting on its own.
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.to_thread.run_sync, _lineup, "stop", "--data-dir", stack.data_dir)
        stopped = await in_browser(until, browser, _stopped_line, GIVE_UP_S / 2)
    assert stopped == "the runtime has stopped: start it with `lineup run`, then `lineup open`"


async def test_messages_typed_while_the_appserver_is_down_wait_and_go_out_once(
    stack: Stack, browser: WebDriver
) -> None:
    await start_web_runtime(stack)
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    await in_browser(until, browser, lambda d: len(shown_items(d)) == 1)

    await stack.stop_appserver()
    await stack.wait_lifecycle("offline_degraded")
    await in_browser(until, browser, lambda d: connection_state(d) == "offline")
    typed = ["first", "second", "third"]
    for text in typed:
        await in_browser(_type_message, browser, text)

    def pending(d: WebDriver) -> bool:
        items = shown_items(d)[1:]
        return [state for _, state, _ in items] == ["pending"] * 3

    await in_browser(until, browser, pending)
    assert _user_texts(stack) == []

    await stack.start_appserver()
    await in_browser(until, browser, lambda d: connection_state(d) == "online", 30)
    settled = await in_browser(until, browser, _settled, 30)
    assert [state for _, state, _ in settled[1:]] == ["accepted"] * 3
    assert _user_texts(stack) == typed


async def test_the_registry_and_the_switcher_in_the_page(stack: Stack, browser: WebDriver) -> None:
    await start_web_runtime(stack)
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    await in_browser(lambda: browser.find_element(By.ID, "tab-apps").click())

    def app_button(d: WebDriver, app: str, label: str) -> Any:
        row = d.find_element(By.CSS_SELECTOR, f'#apps-list li[data-app="{app}"]')
        found = [b for b in row.find_elements(By.TAG_NAME, "button") if b.text == label]
        return found[0] if found and found[0].is_enabled() else None

    # Set the default app: the app manager records it, the page says so.
    await in_browser(
        lambda: until(browser, lambda d: app_button(d, "settings", "Set as default")).click()
    )
    await wait_for(
        lambda: read_apps(stack.data_dir)["settings"].get("default_app") == "settings",
        30,
        "settings to be the default app",
    )
    await in_browser(
        until, browser, lambda d: "opens settings" in d.find_element(By.ID, "apps-default").text
    )

    # What a record cannot take is not offered, and the row says why: the chat stays, a
    # core app may be disabled but not removed.
    def buttons(d: WebDriver, app: str) -> list[str]:
        row = d.find_element(By.CSS_SELECTOR, f'#apps-list li[data-app="{app}"]')
        return [b.text for b in row.find_elements(By.TAG_NAME, "button")]

    assert await in_browser(until, browser, lambda d: buttons(d, "chat")) == [
        "Open",
        "Set as default",
    ]
    assert await in_browser(buttons, browser, "settings") == ["Open", "Disable", "Set as default"]
    why = await in_browser(
        lambda: browser.find_element(By.CSS_SELECTOR, '#apps-list li[data-app="chat"]')
    )
    assert "cannot be disabled or removed" in str(await in_browser(why.get_attribute, "title"))

    # The switcher shows the focus stack by the apps' titles, the one in front first and
    # marked; opening an app brings it to the front, and the switcher brings the chat back.
    def stack_shown(d: WebDriver) -> list[str]:
        return [
            f"{b.text} (in front)" if b.get_attribute("aria-current") == "true" else b.text
            for b in d.find_elements(By.CSS_SELECTOR, "#focus-stack button.focus")
        ]

    def focus_stack() -> list[str]:
        return list(read_apps(stack.data_dir)["settings"].get("focus_stack", []))

    assert await in_browser(stack_shown, browser) == ["Chat (in front)"]
    await in_browser(lambda: until(browser, lambda d: app_button(d, "settings", "Open")).click())
    await wait_for(lambda: focus_stack()[-1:] == ["settings:main"], 30, "settings in front")
    await in_browser(
        until,
        browser,
        lambda d: stack_shown(d) == ["Settings (in front)", "Chat"],
    )

    def focus_chat(d: WebDriver) -> bool:
        buttons = d.find_elements(By.CSS_SELECTOR, "#focus-stack button.focus")
        chat = [
            b for b in buttons if b.text == "Chat" and b.get_attribute("aria-current") != "true"
        ]
        if chat:
            chat[0].click()
        return bool(chat)

    await in_browser(until, browser, focus_chat)
    await wait_for(lambda: focus_stack()[-1:] == ["chat:main"], 30, "the chat in front again")
    await in_browser(until, browser, lambda d: stack_shown(d)[0] == "Chat (in front)")


def _stopped_line(driver: WebDriver) -> str | None:
    """What the header says once the page knows its runtime has stopped."""
    shown = driver.find_element(By.ID, "connection")
    return str(shown.text) if shown.get_attribute("data-state") == "stopped" else None


def _lineup(*args: str | Path) -> None:
    """A `lineup` command, run as the user types it (in this process: no start-up cost)."""
    assert main([str(arg) for arg in args]) == 0, args


async def test_an_installed_app_is_enabled_disabled_and_removed_in_the_page(
    stack: Stack, browser: WebDriver, tmp_path: Path
) -> None:
    await start_web_runtime(stack)
    # The user installs a signed pomodoro, as the README says.
    bundle, keys = tmp_path / "pomodoro.bundle", tmp_path / "keys"
    _lineup("app", "keygen", "--out", keys, "--name", "me")
    _lineup("app", "build", REPO_ROOT / "apps" / "pomodoro", "--out", bundle)
    _lineup("app", "sign", bundle, "--key", keys / "me.key")
    (stack.data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(keys / "me.pub", stack.data_dir / "trusted_keys" / "me.pub")
    # It waits for the operation's end, polling: off the trio loop.
    await trio.to_thread.run_sync(_lineup, "app", "install", bundle, "--data-dir", stack.data_dir)
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    await in_browser(lambda: browser.find_element(By.ID, "tab-apps").click())

    def record() -> dict[str, Any] | None:
        rows = read_apps(stack.data_dir)["records"]
        return next((r for r in rows if r["app_scope"] == "pomodoro"), None)

    def press(label: str) -> None:
        def pressed(d: WebDriver) -> bool:
            row = d.find_element(By.CSS_SELECTOR, '#apps-list li[data-app="pomodoro"]')
            buttons = row.find_elements(By.TAG_NAME, "button")
            found = [b for b in buttons if b.text == label and b.is_enabled()]
            if found:
                found[0].click()
            return bool(found)

        until(browser, pressed)

    def facts(d: WebDriver) -> str:
        return str(
            d.find_element(By.CSS_SELECTOR, '#apps-list li[data-app="pomodoro"] .facts').text
        )

    start = bool((record() or {})["enabled"])
    for label in ("Disable", "Enable") if start else ("Enable", "Disable"):
        await in_browser(press, label)
        wanted = label == "Enable"
        await wait_for(lambda w=wanted: bool((record() or {})["enabled"]) is w, 30, label)
        shown = "enabled" if wanted else "disabled"
        await in_browser(until, browser, lambda d, s=shown: facts(d) == f"installed · {s}")

    # An action the registry refuses is said where the user is: the page still offers the
    # toggle (its web host held still while the app was removed behind its back).
    assert stack.runtime is not None
    toggle = "Disable" if (record() or {})["enabled"] else "Enable"
    web_host = stack.runtime.actors()["web_host"]["pid"]
    os.kill(web_host, signal.SIGSTOP)
    try:
        await trio.to_thread.run_sync(
            _lineup, "app", "remove", "pomodoro", "--yes", "--data-dir", stack.data_dir
        )
        await in_browser(press, toggle)
    finally:
        os.kill(web_host, signal.SIGCONT)
    said = await in_browser(
        until,
        browser,
        lambda d: (
            d.find_element(By.ID, "notice").is_displayed() and d.find_element(By.ID, "notice").text
        ),
    )
    assert said == f"Could not {toggle.lower()} Pomodoro: no app 'pomodoro' is installed"
    await in_browser(lambda: browser.find_element(By.ID, "notice-close").click())
    assert not await in_browser(lambda: browser.find_element(By.ID, "notice").is_displayed())
    assert record() is None
    await in_browser(
        until,
        browser,
        lambda d: not d.find_elements(By.CSS_SELECTOR, '#apps-list li[data-app="pomodoro"]'),
    )


TIMELINE_JS = REPO_ROOT / "actors" / "web_host" / "static" / "timeline.js"
# The page's timeline (`timeline.js`) on its own: 120 items in order, one out of order, one
# redrawn and the inline card placed, then a reset that keeps the card. Its blocks, each as
# (tag, role, the ids of its items), before and after, the last item, and the items' roles.
TIMELINE = """
  document.body.innerHTML = '<div id="timeline" role="list"></div>';
  const timeline = window.lineupTimeline;
  const item = (id, order) => {
    const li = document.createElement('li');
    li.dataset.id = id;
    li.dataset.order = String(order);
    return li;
  };
  for (let n = 0; n < 120; n++) timeline.place(item('m' + n, 2 * n), 2 * n);
  timeline.place(item('late', 101), 101);
  timeline.place(item('m7', 14), 14);
  const card = item('', 239.5);
  card.id = 'surface-card';
  timeline.place(card, 239.5);
  const ids = (block) => [...block.children].map((li) => li.dataset.id || li.id);
  const blocks = () => [...document.getElementById('timeline').children].map(
    (b) => [b.tagName, b.getAttribute('role'), ids(b)]);
  const before = blocks();
  const last = timeline.last().id;
  const roles = [...document.querySelectorAll('li')].map((li) => li.getAttribute('role'));
  timeline.clear('surface-card');
  return {before, last, roles, after: blocks()};
"""


def test_the_timeline_lays_items_out_in_blocks_of_fifty(browser: WebDriver) -> None:
    browser.get("about:blank")
    browser.execute_script(TIMELINE_JS.read_text(encoding="utf-8"))
    shown = browser.execute_script(TIMELINE)
    ids = [f"m{n}" for n in range(120)]
    # The late item goes by its order, into a block of 50 already.
    assert shown["before"] == [
        ["OL", "none", ids[:50]],
        ["OL", "none", [ids[50], "late", *ids[51:100]]],
        ["OL", "none", [*ids[100:], "surface-card"]],
    ]
    assert shown["last"] == "surface-card"
    # Each a list item to a screen reader, its block nothing.
    assert set(shown["roles"]) == {"listitem"}
    assert shown["after"] == [["OL", "none", ["surface-card"]]]
