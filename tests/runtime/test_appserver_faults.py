"""AppServer faults (dropped connections, duplicated and delayed frames) change nothing
the user or the agent sees: each message once, in order, both ways."""

from __future__ import annotations

import trio

from peers.appserver import Faults

from .helpers import CONVERSATION, Stack, texts, wait_for


async def test_drops_duplicates_and_delays_change_nothing(stack: Stack) -> None:
    server = await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")
    await wait_for(lambda: len(stack.timeline()) == 1, 30, "the greeting")
    server.faults = Faults(drop_every=97, duplicate_every=13, delay_ms=1.0)
    count = 600
    envelopes = [
        agent.envelope("lineup.message", CONVERSATION, {"text": f"m{n}", "format": "plain"})
        for n in range(count)
    ]
    submissions = [agent.enqueue(e) for e in envelopes]
    for n in range(10):
        stack.user_says(f"user {n}")
    for submission in submissions:
        assert (await submission.verdict()).status == "accepted"
    await wait_for(lambda: len(stack.timeline()) >= 1 + count + 10, 60, "everything in the chat")
    timeline = stack.timeline()
    agent_ids = [i["id"] for i in timeline if i["sender"] == "agent:demo"]
    assert agent_ids[1:] == [e["id"] for e in envelopes]
    assert texts(timeline, "user") == [f"user {n}" for n in range(10)]
    received: list[str] = []
    with trio.fail_after(60):
        while len(received) < 10:
            message = await agent.receive()
            if message.sender.kind == "user":
                received.append(message.payload().text)
    assert received == [f"user {n}" for n in range(10)]
    assert server.statistics().connections_dropped > 0
    assert server.statistics().frames_duplicated > 0
