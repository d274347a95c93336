"""While messages wait behind a step, the tool router's envelopes for the agent wait for one
sync of its WAL with theirs and leave merged, before those messages are acked: killed with
them waiting, it loses none and sends none twice."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import trio

from actors.tool_router._steps import (
    MERGED_MAX_BYTES,
    SHOWN,
    SHOWN_MANY,
    SUBMIT,
    merge_held,
    merged_id,
)
from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .helpers import Agent, effects, install_toolbox, new_revision, read_tool_calls, stream_finals

CALLS = 40


def _submit(message_id: str, *keys: str, size: int = 10) -> list[object]:
    items = [{"key": k, "envelope": "x" * size, "conversation_id": "c"} for k in keys]
    return ["transport", SUBMIT, message_id, {"items": items}]


def _shown(message_id: str, call_id: str, state: str) -> list[object]:
    return ["app.chat", SHOWN, message_id, {"call_id": call_id, "state": state}]


def test_the_submits_go_as_one_then_the_chats_steps_as_one() -> None:
    held = [
        _submit("s1", "a"),
        _shown("e1", "c1", "running"),
        _submit("s2", "b", "c"),
        _shown("e2", "c2", "running"),
        _submit("s3", "d"),
    ]
    merged = merge_held(held)
    assert [(o[0], o[1], o[2]) for o in merged] == [
        ("transport", SUBMIT, merged_id(["s1", "s2", "s3"])),
        ("app.chat", SHOWN_MANY, merged_id(["e1", "e2"])),
    ]
    # A replay that merges what came again differently makes another id: the mailbox
    # drops none of it for a duplicate of what went before.
    assert merged_id(["s1", "s2", "s3"]) == merged_id(["s1", "s2", "s3"])
    assert merged_id(["s1", "s2"]) not in {"s1", "s2", merged_id(["s1", "s2", "s3"])}
    assert [i["key"] for i in merged[0][3]["items"]] == ["a", "b", "c", "d"]
    assert merged[1][3]["steps"] == [
        {"id": "e1", "step": held[1][3]},
        {"id": "e2", "step": held[3][3]},
    ]
    big = MERGED_MAX_BYTES // 2 + 1
    apart = merge_held([_submit("s1", "a", size=big), _submit("s2", "b", size=big)])
    assert [o[2] for o in apart] == ["s1", "s2"]  # together past the cap: each on its own
    alone = merge_held([_submit("s1", "a"), _shown("e1", "c1", "running")])
    assert [(o[1], o[2]) for o in alone] == [(SUBMIT, "s1"), (SHOWN, "e1")]


def test_a_calls_passing_step_for_the_chat_goes_only_if_nothing_of_it_follows() -> None:
    held = [
        _shown("r1", "c1", "running"),
        _shown("r2", "c2", "running"),
        _submit("s1", "a"),
        _shown("p1", "c1", "progress"),
        _shown("f1", "c1", "succeeded"),
    ]
    # c1's running goes (its later steps follow); its progress stays (it carries a
    # percent); c2's running stays: nothing of c2 follows.
    steps = merge_held(held)[1][3]["steps"]
    assert [step["id"] for step in steps] == ["r2", "p1", "f1"]


async def test_envelopes_waiting_for_a_shared_sync_survive_a_kill(
    stack: Stack, toolbox: tuple[Path, Path], tmp_path: Path
) -> None:
    once = tmp_path / "crashed"
    once.mkdir()
    await stack.start_appserver()
    crash = {"LINEUP_CRASH": "tool_router.unsynced@3", "LINEUP_CRASH_ONCE_DIR": str(once)}
    runtime = await stack.start_runtime(env=crash)
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    await new_revision(stack, 0)
    install_toolbox(stack, toolbox)
    await new_revision(stack, 1)
    agent = Agent(stack, client, "toolbox")
    await agent.call("call_warm", "box.echo", arguments={"value": "warm"})
    restarts = runtime.actors()["tool_router"]["restarts"]

    plan = [f"call_s{i:03d}" for i in range(CALLS)]  # box.count: never run twice
    async with trio.open_nursery() as nursery:
        for call_id in plan:
            nursery.start_soon(client.submit, agent.invoke(call_id, "box.count"))

    def all_final() -> bool:
        rows = {r["call_id"]: r for r in read_tool_calls(stack.data_dir)}
        return all(rows.get(c, {}).get("state") == "succeeded" for c in plan)

    await wait_for(all_final, 120, "every call's outcome")
    await wait_for(lambda: set(plan) <= set(stream_finals(stack)), 60, "every final streamed")
    # The tool router died once with a step's envelopes waiting for the shared sync.
    assert (once / "tool_router.unsynced").exists()
    assert runtime.actors()["tool_router"]["restarts"] == restarts + 1
    stream = stream_finals(stack)
    assert {c: len(stream[c]) for c in plan if len(stream[c]) != 1} == {}
    ran = Counter(effects(stack))
    assert {c: ran[c] for c in plan if ran[c] != 1} == {}
