"""Agent → chat: every agent message reaches the chat timeline once, in the agent's order."""

from __future__ import annotations

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
