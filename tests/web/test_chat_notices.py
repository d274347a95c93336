"""The chat app tells the web host when its view changed, and the app manager when the
registry did, and nobody else may: notices with no content, admitted by the web host's door
from `app.chat` and `app_manager` only, sent only where the runtime runs a web host. (How
fast the page then shows a message is measured by `lineup bench web`, never asserted here;
that the registry's notice alone frames an app in an open page is `test_surfaces`'s.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from actors import runtime_children
from actors.kernel import load_door
from tests.runtime.helpers import CONVERSATION, Stack, texts, wait_for

from .conftest import start_web_runtime

NOTICE = "web_host.chat.changed"
REGISTRY_NOTICE = "web_host.registry.changed"


def _config_of(config: runtime_children.RuntimeConfig, name: str) -> dict[str, Any]:
    return dict(next(spec for spec in config.children if spec.name == name).config)


def _chat_config(config: runtime_children.RuntimeConfig) -> dict[str, Any]:
    return _config_of(config, "app.chat")


def test_only_the_chat_app_may_tell_and_only_a_web_host_is_told(tmp_path: Path) -> None:
    config = runtime_children.default_config(tmp_path, web_port=0)
    web = next(spec for spec in config.children if spec.name == "web_host")
    assert web.door is not None
    door = load_door(web.door)
    assert door.senders_of(NOTICE) == {"app.chat"}
    assert not door.allows(NOTICE, "app.pomodoro")
    assert door.allows(NOTICE, "app.chat")
    assert door.checks[NOTICE]({}) == {}
    assert _chat_config(config)["view_watcher"] == "web_host"
    # Without a web host, the chat tells nobody (a message to no child would be refused).
    assert "view_watcher" not in _chat_config(runtime_children.default_config(tmp_path))

    # The registry's notice: from the app manager only, and only where there is a web host.
    assert door.senders_of(REGISTRY_NOTICE) == {"app_manager"}
    assert not door.allows(REGISTRY_NOTICE, "app.chat")
    assert door.checks[REGISTRY_NOTICE]({}) == {}
    assert _config_of(config, "app_manager")["registry_watcher"] == "web_host"
    without = runtime_children.default_config(tmp_path)
    assert "registry_watcher" not in _config_of(without, "app_manager")


def test_only_the_gateway_asks_the_web_host_to_show_a_notification(tmp_path: Path) -> None:
    config = runtime_children.default_config(tmp_path, web_port=0)
    web = next(spec for spec in config.children if spec.name == "web_host")
    assert web.door is not None
    door = load_door(web.door)
    for asked in ("web_host.notify", "web_host.pages"):
        # No app shows a notification on the page past the gateway's checks and consent.
        assert door.senders_of(asked) == {"capability_gateway"}
        assert not door.allows(asked, "app.hostile")
    gateway = next(spec for spec in config.children if spec.name == "capability_gateway")
    assert gateway.config["web_host"] == "web_host"
    alone = runtime_children.default_config(tmp_path).children
    assert "web_host" not in next(s for s in alone if s.name == "capability_gateway").config


def _web_host_notices(stack: Stack) -> int:
    actors = stack.control({"type": "actors", "stats": True})["actors"]
    record = next(actor for actor in actors if actor["name"] == "web_host")
    return int(record["statistics"]["extra"]["chat_notices"])


def _refused_from_chat(stack: Stack) -> dict[str, Any]:
    actors = stack.control({"type": "actors"})["actors"]
    return dict(next(actor for actor in actors if actor["name"] == "app.chat")["refused"])


async def test_a_message_in_the_chat_reaches_the_web_host_as_a_notice(stack: Stack) -> None:
    await start_web_runtime(stack)
    # The chat's first notice, at its start: what its last run may have left unsaid.
    started = await wait_for(lambda: _web_host_notices(stack), 30, "the chat's first notice")
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")
    await wait_for(lambda: texts(stack.timeline()) == ["hello"], 30, "the greeting in the chat")
    await wait_for(
        lambda: _web_host_notices(stack) > started, 30, "the notice of the greeting's change"
    )
    assert _refused_from_chat(stack) == {}


async def test_with_no_page_open_the_chat_says_its_changes_once_a_second(stack: Stack) -> None:
    """Nothing waits on a notice while no page is open: changes a tenth of a second apart
    cost about one notice a second, not one each."""
    await start_web_runtime(stack)
    started = await wait_for(lambda: _web_host_notices(stack), 30, "the chat's first notice")
    agent = await stack.start_agent()
    sent = [f"paced {n}" for n in range(12)]
    begun = trio.current_time()
    for text in sent:
        await agent.send_text(CONVERSATION, text)
        await trio.sleep(0.1)  # the workload's pace: a change every tenth of a second
    await wait_for(lambda: texts(stack.timeline()) == sent, 30, "the paced messages in the chat")
    seconds = trio.current_time() - begun
    said = _web_host_notices(stack) - started
    assert 1 <= said <= seconds + 2, (said, seconds)
