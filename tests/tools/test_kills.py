"""200 calls across two conversations while the tool router, the router, the transport, the
store and the app itself are killed with SIGKILL at random: every call ends with exactly one
final outcome in the stream the agent reads, and the app's own record of its side effects
agrees — a call not declared idempotent never ran twice."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import trio

from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .helpers import Agent, effects, install_toolbox, new_revision, read_tool_calls, stream_finals

CALLS = 200
VICTIMS = ("tool_router", "router", "transport", "store", "app.toolbox")
OTHER = "conv-2"


async def test_calls_survive_kills_with_one_outcome_each(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    client = await stack.start_agent()
    for conversation in (CONVERSATION, OTHER):
        await client.send_text(conversation, "hello")
        await new_revision(stack, 0, conversation)
    revisions = {c: 0 for c in (CONVERSATION, OTHER)}
    install_toolbox(stack, toolbox)
    for conversation in revisions:
        revisions[conversation] = await new_revision(stack, 1, conversation)
    agent = Agent(stack, client, "toolbox")
    for conversation in revisions:  # both instances up before the storm
        await agent.call(
            f"call_warm_{conversation.replace('-', '')}",
            "box.echo",
            arguments={"value": "warm"},
            conversation=conversation,
        )

    plan = {
        f"call_k{i:03d}": (
            CONVERSATION if i % 2 else OTHER,
            "box.count" if i % 4 < 2 else "box.count_again",
        )
        for i in range(CALLS)
    }
    rng = random.Random(7)
    kills: list[str] = []
    submitted = trio.Event()

    async def submit(ids: list[str]) -> None:
        for call_id in ids:
            conversation, method = plan[call_id]
            await client.submit(agent.invoke(call_id, method, conversation=conversation))

    async def killer() -> None:
        while not submitted.is_set() or len(kills) < 8:
            await trio.sleep(rng.uniform(0.1, 0.4))
            victim = rng.choice(VICTIMS)
            if stack.kill(victim):
                kills.append(victim)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(killer)
        async with trio.open_nursery() as senders:
            ids = sorted(plan)
            for n in range(20):
                senders.start_soon(submit, ids[n::20])
        submitted.set()

    def all_final() -> bool:
        rows = {r["call_id"]: r for r in read_tool_calls(stack.data_dir)}
        return all(rows.get(c, {}).get("state") in ("succeeded", "failed") for c in plan)

    await wait_for(all_final, 180, "every call's outcome")
    await wait_for(lambda: set(plan) <= set(stream_finals(stack)), 120, "every final streamed")
    stream = stream_finals(stack)
    assert {c: len(stream[c]) for c in plan if len(stream[c]) != 1} == {}, kills
    rows = {r["call_id"]: r for r in read_tool_calls(stack.data_dir)}
    ran = Counter(effects(stack))
    for call_id, (_, method) in plan.items():
        row = rows[call_id]
        if method == "box.count":
            assert ran[call_id] <= 1, (call_id, ran[call_id], kills)
        if row["state"] == "succeeded":
            assert ran[call_id] >= 1, (call_id, row)
            assert row["output"]["n"] >= 1
        else:
            assert row["code"] in ("handler_failed", "operation_expired"), row
    succeeded = sum(r["state"] == "succeeded" for c, r in rows.items() if c in plan)
    assert succeeded >= CALLS // 2, (succeeded, kills)
    assert set(kills) >= {"tool_router", "store"} or len(kills) >= 8
