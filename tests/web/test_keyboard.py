"""The window by keyboard alone, in real Chromium on a real runtime: Tab moves focus from
control to control (each one reachable, none a trap), Enter acts. A person sends a message,
answers the agent's choice, brings an app to the front, returns to the chat and closes the
app without touching the mouse."""

from __future__ import annotations

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from actors.app_manager.registry import read_apps
from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .conftest import appserver_messages, in_browser, open_page, start_web_runtime, until

MOST_TABS = 60  # more stops than the page has: a control not reached by then is not reachable


def _focused(driver: WebDriver) -> str:
    """The focused control as a person hears it: its accessible label, else its text."""
    return str(
        driver.execute_script(
            "const e = document.activeElement;"
            "return (e.getAttribute('aria-label') || e.textContent || e.id || '').trim();"
        )
    )


def _tab_to(driver: WebDriver, label: str) -> None:
    """Press Tab until the control labelled `label` has the focus."""
    for _ in range(MOST_TABS):
        if _focused(driver) == label:
            return
        ActionChains(driver).send_keys(Keys.TAB).perform()
    raise AssertionError(f"{label!r} is not reached by Tab (last: {_focused(driver)!r})")


def _keys(driver: WebDriver, *keys: str) -> None:
    ActionChains(driver).send_keys(*keys).perform()


def _front(stack: Stack) -> str:
    return str((read_apps(stack.data_dir)["settings"].get("focus_stack") or ["?"])[-1])


async def test_a_person_uses_the_window_by_keyboard_alone(stack: Stack, browser: WebDriver) -> None:
    await start_web_runtime(stack)
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)
    await in_browser(until, browser, lambda d: d.find_elements("css selector", "#timeline li.item"))

    # The skip link takes the focus to the message box; Enter sends what was typed.
    await in_browser(lambda: browser.find_element("tag name", "body").click())
    await in_browser(_tab_to, browser, "Skip to the message box")
    await in_browser(_keys, browser, Keys.ENTER)
    focused_id = "return document.activeElement.id"
    await in_browser(until, browser, lambda d: d.execute_script(focused_id) == "composer-text")
    await in_browser(_keys, browser, "typed by keyboard", Keys.ENTER)

    def sent() -> bool:
        return any(
            m["payload"].get("text") == "typed by keyboard"
            for m in appserver_messages(stack, "lineup.message")
        )

    await wait_for(sent, 30, "the typed message at the AppServer")

    # The agent asks; Tab reaches the option, Enter answers it.
    await agent.ask_choice(CONVERSATION, "Which colour?", {"red": "Red", "green": "Green"})
    await in_browser(until, browser, lambda d: d.find_elements("css selector", ".card button"))
    await in_browser(_tab_to, browser, "Green")
    await in_browser(_keys, browser, Keys.ENTER)
    answered = await wait_for(
        lambda: appserver_messages(stack, "lineup.interaction.response"), 30, "the answer"
    )
    assert answered[0]["payload"]["selected"] == ["green"]

    # The registry opens an app in front; the switcher brings the chat back, then closes it.
    await in_browser(_tab_to, browser, "Apps")
    await in_browser(_keys, browser, Keys.ENTER)

    def open_settings(d: WebDriver) -> bool:
        row = d.find_elements("css selector", '#apps-list li[data-app="settings"] button')
        return bool(row) and row[0].text == "Open"

    await in_browser(until, browser, open_settings)
    for _ in range(MOST_TABS):  # the first Open is the app registry's: on to the settings'
        label = await in_browser(_focused, browser)
        row = await in_browser(
            browser.execute_script, "return document.activeElement.closest('li')?.dataset.app"
        )
        if label == "Open" and row == "settings":
            break
        await in_browser(_keys, browser, Keys.TAB)
    await in_browser(_keys, browser, Keys.ENTER)
    await wait_for(lambda: _front(stack) == "settings:main", 30, "settings in front")
    await in_browser(_tab_to, browser, "Chat")
    await in_browser(_keys, browser, Keys.ENTER)
    await wait_for(lambda: _front(stack) == "chat:main", 30, "the chat in front")
    await in_browser(_tab_to, browser, "Close Settings")
    await in_browser(_keys, browser, Keys.ENTER)

    def closed() -> bool:
        apps = read_apps(stack.data_dir)
        live = [i for i in apps["instances"] if i["state"] not in ("closed", "failed")]
        return not any(i["app_scope"] == "settings" for i in live)

    await wait_for(closed, 30, "settings closed")
