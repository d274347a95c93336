"""The window as axe-core sees it, in real Chromium on a real runtime: the chat with the
agent's messages, a task and open questions, an answered question, and the app registry
have no serious or critical accessibility violation, at a desktop's size and a phone's."""

from __future__ import annotations

import re

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.runtime.helpers import CONVERSATION, Stack

from .axe import axe_source, violations_at_sizes
from .conftest import in_browser, open_page, start_web_runtime

MESSAGE_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


async def test_the_chat_and_the_registry_have_no_serious_violation(
    stack: Stack, browser: WebDriver
) -> None:
    source = axe_source()
    await start_web_runtime(stack)
    agent = await stack.start_agent()
    await agent.send_markdown(CONVERSATION, "**Hello.** Here is [a link](https://example.org).")
    await agent.send_task_progress(CONVERSATION, "build", "running", percent=40, label="compiling")
    await agent.ask_choice(CONVERSATION, "Which colour?", {"red": "Red", "green": "Green"})
    await agent.ask_confirm(CONVERSATION, "Ship it?", confirm_label="Ship", cancel_label="Wait")
    await agent.ask_input(CONVERSATION, "Release name?", placeholder="Sprint 12")
    await in_browser(open_page, browser, stack.data_dir, CONVERSATION)

    def chat_ready(d: WebDriver) -> bool:
        return len(d.find_elements(By.CSS_SELECTOR, "#timeline li.item")) == 4 and bool(
            d.find_elements(By.CSS_SELECTOR, "#task-list li")
        )

    assert await in_browser(violations_at_sizes, browser, source, chat_ready, "chat") == {
        "1280x800": [],
        "390x844": [],
    }
    # Nothing of the machinery is on screen: no message id, no counter line.
    shown = str(await in_browser(browser.execute_script, "return document.body.innerText"))
    assert MESSAGE_ID.search(shown) is None, shown
    assert "relayed" not in shown and "received" not in shown and "accepted" not in shown

    await in_browser(lambda: browser.find_element(By.ID, "tab-apps").click())

    def registry_ready(d: WebDriver) -> bool:
        return len(d.find_elements(By.CSS_SELECTOR, "#apps-list li")) >= 3

    assert await in_browser(violations_at_sizes, browser, source, registry_ready, "apps") == {
        "1280x800": [],
        "390x844": [],
    }
