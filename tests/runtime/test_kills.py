"""Agent → chat under SIGKILL: transport, router, store and chat are killed at random
moments while 5,000 agent messages flow; the chat timeline ends with each exactly once, in
the agent's order, and the user's messages typed meanwhile reach the agent once, in order.
"""

from __future__ import annotations

import random

import trio

from .helpers import CONVERSATION, Stack, texts, wait_for

VICTIMS = ("transport", "router", "store", "app.chat")


async def test_agent_to_chat_survives_random_kills(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    count = 5000
    envelopes = [
        agent.envelope("lineup.message", CONVERSATION, {"text": f"m{n}", "format": "plain"})
        for n in range(count)
    ]
    rng = random.Random(4)
    kills: list[str] = []
    done = trio.Event()

    async def killer() -> None:
        while not done.is_set():
            with trio.move_on_after(rng.uniform(0.1, 0.5)):
                await done.wait()
            victim = rng.choice(VICTIMS)
            if not done.is_set() and stack.kill(victim):
                kills.append(victim)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(killer)
        for start in range(0, count, 500):
            submissions = [agent.enqueue(e) for e in envelopes[start : start + 500]]
            for submission in submissions:
                assert (await submission.verdict()).status == "accepted"
            stack.user_says(f"user {start // 500}")
        await wait_for(
            lambda: len(stack.timeline()) >= count + 10, 120, "every message in the chat"
        )
        done.set()

    assert set(kills) == set(VICTIMS), kills
    timeline = stack.timeline()
    agent_items = [item for item in timeline if item["sender"] == "agent:demo"]
    assert [item["id"] for item in agent_items] == [e["id"] for e in envelopes]
    assert texts(timeline, "user") == [f"user {n}" for n in range(10)]

    received: list[str] = []
    with trio.fail_after(60):
        while len(received) < 10:
            message = await agent.receive()
            if message.sender.kind == "user":
                received.append(message.payload().text)
    assert received == [f"user {n}" for n in range(10)]
    await wait_for(
        lambda: {i["state"] for i in stack.timeline() if i["sender"] == "user"} == {"accepted"},
        30,
        "the user's messages to be accepted",
    )
