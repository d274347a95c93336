"""Agent → chat: every agent message reaches the chat timeline once, in the agent's order;
a question the agent withdraws is closed once, and an answer that comes after is refused."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from typing import Any

import trio

from apps.chat import app_dir, history
from lineup.ui_session import UiSession

from .helpers import CONVERSATION, Stack, texts, wait_for


async def test_agent_messages_reach_the_chat_once_in_order(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    count = 300
    envelopes = [
        agent.envelope("lineup.message", CONVERSATION, {"text": f"message {n}", "format": "plain"})
        for n in range(count)
    ]
    submissions = [agent.enqueue(envelope) for envelope in envelopes]
    for submission in submissions:
        assert (await submission.verdict()).status == "accepted"
    await wait_for(lambda: len(stack.timeline()) >= count, 60, f"{count} messages in the chat")
    timeline = stack.timeline()
    assert [item["id"] for item in timeline] == [e["id"] for e in envelopes]
    assert texts(timeline) == [f"message {n}" for n in range(count)]
    assert {item["sender"] for item in timeline} == {"agent:demo"}


def _chat_diagnostics(stack: Stack) -> list[dict[str, Any]]:
    """What the chat app filed in its diagnostics, oldest first (runtime.db)."""
    path = stack.data_dir / "runtime.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        rows = db.execute(
            "SELECT name, fields FROM app_diagnostic_events WHERE app_scope = 'chat' ORDER BY pos"
        ).fetchall()
    return [{"name": name, **json.loads(fields)} for name, fields in rows]


def _chat_log_state(stack: Stack, message_id: str) -> str:
    """The state of one agent message in the chat app's own log: received, or acked."""
    path = app_dir(stack.data_dir) / "app.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        return str(db.execute("SELECT state FROM events WHERE id = ?", (message_id,)).fetchone()[0])


async def test_a_withdrawn_question_closes_once_and_a_late_answer_is_refused(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    colour = await agent.ask_choice(
        CONVERSATION, "Which colour?", {"red": "Red"}, interaction_id="colour"
    )
    await agent.ask_confirm(CONVERSATION, "Ship it?", interaction_id="ship")

    def view() -> dict[str, Any]:
        return history(stack.data_dir, CONVERSATION)

    await wait_for(lambda: len(view()["pending_interactions"]) == 2, 30, "two open questions")

    # Withdrawn once: the same message again is the AppServer's duplicate, never the chat's
    # second withdrawal of it (which it would file as interaction_closed).
    withdrawal = agent.envelope(
        "lineup.interaction.withdraw",
        CONVERSATION,
        {"interaction_id": "colour", "reason": "the conversation moved on"},
    )
    assert (await agent.submit(withdrawal)).status == "accepted"
    assert (await agent.submit(withdrawal)).duplicate
    await wait_for(
        lambda: [w["interaction_id"] for w in view()["pending_interactions"]] == ["ship"],
        30,
        "the colour question withdrawn",
    )
    (asked,) = [item for item in view()["timeline"] if item["id"] == colour.message_id]
    assert (asked["state"], asked["reason"]) == ("withdrawn", "the conversation moved on")
    # It waits for no answer now: the chat acknowledges it (its ack follows its view).
    await wait_for(
        lambda: _chat_log_state(stack, colour.message_id) == "acked", 30, "the question acked"
    )

    # Withdrawing it again, or a question never asked, changes nothing: each has its code.
    again = await agent.withdraw(CONVERSATION, "colour")
    unknown = await agent.withdraw(CONVERSATION, "never-asked")
    filed = await wait_for(
        lambda: (found := _chat_diagnostics(stack)) and len(found) >= 2 and found,
        30,
        "the chat to file both refusals",
    )
    assert [(d["name"], d["code"], d["message_id"]) for d in filed] == [
        ("interaction.withdraw.refused", "interaction_closed", again.message_id),
        ("interaction.withdraw.refused", "interaction_not_found", unknown.message_id),
    ]
    assert [w["interaction_id"] for w in view()["pending_interactions"]] == ["ship"]

    # The user answers the withdrawn question late (a page that was cut off): refused where
    # they see it, and not sent; their answer to the open one goes to the agent.
    session = UiSession(stack.data_dir, session_id="test")
    late = {"kind": "answer", "conversation_id": CONVERSATION, "interaction_id": "colour"}
    session.act({**late, "selected": ["red"]})
    refused = await wait_for(
        lambda: [i for i in view()["timeline"] if i["sender"] == "user"],
        30,
        "the late answer shown",
    )
    assert [(i["text"], i["state"], i["code"]) for i in refused] == [
        ("chose red", "refused", "withdrawn")
    ]
    session.act({**late, "interaction_id": "ship", "confirmed": True})
    with trio.fail_after(30):
        while (message := await agent.receive()).type != "lineup.interaction.response":
            pass
    assert message.payload().interaction_id == "ship"  # the first answer it gets
    assert view()["pending_interactions"] == []
