"""The host actor: local UI actions and host lifecycle intents are entries of
their own, apart from agent input. A UI session's actions reach the app through the host,
audited as the user's; whatever is malformed, aimed at an unknown app or sent by anything
but a UI session is refused with its code, audited, and reaches no app."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from actors.kernel import ControlError, ui_request
from lineup.ui_session import UiSession
from peers.agent import AgentClient

from .helpers import CONVERSATION, Stack, wait_for


def _audit_codes(stack: Stack) -> list[tuple[str, str]]:
    return [(row["code"], row["detail"]) for row in stack.audit()]


def _actor_stats(stack: Stack, name: str) -> dict[str, Any]:
    assert stack.runtime is not None
    actors = stack.runtime.control({"type": "actors", "stats": True})["actors"]
    record = next(a for a in actors if a["name"] == name)
    return dict(record["statistics"]["extra"])


async def _user_texts(agent: AgentClient, count: int) -> list[str]:
    received: list[str] = []
    while len(received) < count:
        message = await agent.receive()
        if message.sender.kind == "user" and message.type == "lineup.message":
            received.append(message.payload().text)
    return received


async def test_a_ui_session_acts_through_the_host(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")
    await wait_for(lambda: len(stack.timeline()) == 1, 30, "the greeting in the chat")

    session = UiSession(stack.data_dir, session_id="terminal-t1")
    session.open()
    session.intent("foreground", app_scope="chat")
    for n in range(3):
        session.act({"kind": "send", "conversation_id": CONVERSATION, "text": f"typed {n}"})
    assert await _user_texts(agent, 3) == ["typed 0", "typed 1", "typed 2"]

    def audited() -> list[tuple[str, str]] | None:
        codes = _audit_codes(stack)
        actions = sum(row["repeats"] for row in stack.audit() if row["code"] == "ui.action")
        return codes if actions == 3 else None

    codes = await wait_for(audited, 30, "three audited UI actions")
    assert ("host.session.open", "terminal session terminal-t1") in codes
    assert ("host.intent", "foreground chat by terminal-t1") in codes
    # The same routine action within a minute is one row counting them.
    assert [(code, detail) for code, detail in codes if code == "ui.action"] == [
        ("ui.action", "send in chat by terminal-t1")
    ]
    sources = {row["source"] for row in stack.audit() if row["code"].startswith(("ui.", "host."))}
    assert sources == {"host"}
    assert _actor_stats(stack, "host")["sessions"] == {"terminal-t1": "terminal"}
    intents = _actor_stats(stack, "app_manager")["host_intents"]
    assert intents == [{"intent": "foreground", "app_scope": "chat", "session_id": "terminal-t1"}]
    session.close()
    await wait_for(lambda: _actor_stats(stack, "host")["sessions"] == {}, 30, "the close")


async def test_bad_ui_requests_are_refused_with_their_code(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    assert stack.runtime is not None
    host_pid = stack.runtime.pid_of("host")
    session = UiSession(stack.data_dir, session_id="terminal-t2")
    send = {"kind": "send", "conversation_id": CONVERSATION, "text": "x"}
    session.act(send, app_scope="whiteboard")  # no such app
    session.act({"conversation_id": CONVERSATION})  # no kind
    session.act({**send, "text": "y" * 70_000})  # over the input limit
    session.intent("reboot_the_machine")  # not an intent
    UiSession(stack.data_dir, session_id="bad id with spaces").act(send)

    def refusals() -> list[str] | None:
        codes = [code for code, _ in _audit_codes(stack)]
        wanted = ["app_not_installed", "invalid_payload", "too_large", "invalid_payload"]
        found = [c for c in codes if c in ("app_not_installed", "invalid_payload", "too_large")]
        return found if len(found) == len(wanted) + 1 else None

    found = await wait_for(refusals, 30, "five audited refusals")
    assert found == [
        "app_not_installed",
        "invalid_payload",
        "too_large",
        "invalid_payload",
        "invalid_payload",
    ]
    assert stack.timeline() == []
    assert _actor_stats(stack, "host")["refused"] == 5
    assert stack.runtime.pid_of("host") == host_pid  # refused, not crashed
    with pytest.raises(ControlError, match="host"):  # a UI session speaks to the host only
        ui_request(stack.data_dir, {"type": "app.input", "body": send})


async def test_an_actor_cannot_act_for_the_user(stack: Stack, tmp_path: Path) -> None:
    """An actor's host.* or app.* message is not a user's action nor a delivery: the door
    refuses each before it is stored, and counts it against the sender."""
    await stack.start_appserver()
    await stack.start_runtime()
    assert stack.runtime is not None
    runtime = stack.runtime
    spec = {"name": "impostor", "target": "tests.runtime.impostor:Impostor"}
    runtime.control({"type": "start_child", "spec": spec})
    runtime.send("impostor", "impostor.go")

    def refused() -> dict[str, int] | None:
        counts = runtime.actors()["impostor"]["refused"]
        return counts if counts.get("sender_not_allowed") == 3 else None

    assert await wait_for(refused, 30, "the impostor's refusals") == {"sender_not_allowed": 3}
    mailbox = sqlite3.connect(f"file:{runtime.data_dir / 'mailbox.db'}?mode=ro", uri=True)
    with contextlib.closing(mailbox):
        stored = mailbox.execute("SELECT count(*) FROM messages WHERE sender = 'impostor'")
        assert stored.fetchone()[0] == 0  # never stored, so never delivered
    assert _actor_stats(stack, "app.chat")["refused_inputs"] == 0  # nothing reached it
    assert stack.timeline() == []
    # Nothing went out but what the runtime publishes on its own (the tool inventory).
    assert stack.outbox() == []
    sent = stack.given()
    assert [e["type"] for e in sent] == ["lineup.inventory"] * len(sent)
