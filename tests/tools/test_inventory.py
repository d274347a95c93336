"""The inventory follows the registry, and a call is checked against it in the contract's
order: the revision, the tool's visibility, the arguments."""

from __future__ import annotations

import json
from typing import Any

import trio

from actors.store import read_inventories
from peers.agent import AgentClient
from tests.app_manager.conftest import lineup
from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .helpers import (
    Bundles,
    app,
    call_row,
    conversation_open,
    final_of,
    new_revision,
    revision_of,
    sent,
    tools_of,
    trust,
)


def invoke(
    agent: AgentClient, call_id: str, method: str, arguments: dict[str, Any], revision: int
) -> dict[str, Any]:
    envelope = agent.envelope(
        "lineup.tool.invoke",
        CONVERSATION,
        {"method": method, "contract_version": "1", "arguments": arguments},
        app_scope="pomodoro",
        target_kind="runtime",
        call_id=call_id,
        inventory_revision=str(revision),
    )
    return envelope


async def refused(stack: Stack, agent: AgentClient, call_id: str, *args: Any) -> str:
    await agent.submit(invoke(agent, call_id, *args))
    row = await final_of(stack, call_id)
    assert row["state"] == "failed"
    errors = [e for e in sent(stack, "lineup.tool.error") if e["correlation"]["call_id"] == call_id]
    assert len(errors) == 1 and errors[0]["payload"]["code"] == row["code"]
    assert any(a["message_id"] == row["envelope_id"] for a in stack.audit())
    return str(row["code"])


async def test_revisions_follow_the_registry_and_calls_are_checked_in_order(
    stack: Stack, bundles: Bundles
) -> None:
    agent, first = await conversation_open(stack)
    trust(stack, bundles)
    assert tools_of(stack) == []

    app(stack, "install", bundles.v1)
    app(stack, "enable", "pomodoro")
    with_tools = await new_revision(stack, first)
    # `pomodoro.stop` may not launch its app: hidden while no timer instance runs.
    assert tools_of(stack) == ["pomodoro.start", "pomodoro.status"]

    assert await refused(stack, agent, "call_stale", "pomodoro.status", {}, first) == (
        "stale_inventory_revision"
    )
    assert await refused(stack, agent, "call_nosuch", "pomodoro.nosuch", {}, with_tools) == (
        "tool_not_visible"
    )
    assert await refused(
        stack, agent, "call_bad", "pomodoro.start", {"minutes": 0}, with_tools
    ) == ("invalid_arguments")
    assert "minutes" in str(call_row(stack, "call_bad"))

    app(stack, "disable", "pomodoro")
    disabled = await new_revision(stack, with_tools)
    assert tools_of(stack) == []
    assert await refused(stack, agent, "call_old", "pomodoro.status", {}, with_tools) == (
        "stale_inventory_revision"
    )
    assert await refused(stack, agent, "call_off", "pomodoro.status", {}, disabled) == (
        "app_disabled"
    )
    # The person playing the agent is told why the tool is gone, and what to do.
    call = ("--conversation", CONVERSATION, "--tool", "pomodoro.status", "--args", "{}")
    where = ("--data-dir", stack.data_dir, "--appserver-dir", stack.appserver_dir)
    code, _, err = await trio.to_thread.run_sync(
        lambda: lineup("agent", "call", *where, "--appserver", stack.url, *call)
    )
    assert code == 2
    assert " ".join(err.split()) == (
        f"error: cannot call 'pomodoro.status' in '{CONVERSATION}': the app pomodoro is"
        " disabled; enable it with `lineup app enable pomodoro`"
    )
    app(stack, "enable", "pomodoro")
    again = await new_revision(stack, disabled)
    assert tools_of(stack) == ["pomodoro.start", "pomodoro.status"]
    # Nothing visible changed: no new revision, and each one was published once.
    app(stack, "list")
    published = [int(e["payload"]["revision"]) for e in sent(stack, "lineup.inventory")]
    assert published == sorted(set(published)) and published[-1] == again == revision_of(stack)
    await wait_for(
        lambda: all(e["_state"] != "pending" for e in sent(stack, "lineup.inventory")),
        30,
        "the AppServer's verdicts",
    )
    assert all(e["_state"] == "accepted" for e in sent(stack, "lineup.inventory"))


async def test_policy_changes_and_restarts_move_the_revision_forward(
    stack: Stack, bundles: Bundles
) -> None:
    _, first = await conversation_open(stack)
    trust(stack, bundles)
    app(stack, "install", bundles.v1)
    app(stack, "enable", "pomodoro")
    listed = await new_revision(stack, first)
    policy = stack.data_dir / "tool_policy.json"

    policy.write_text(json.dumps({"deny": ["pomodoro/pomodoro.status"]}))
    denied = await new_revision(stack, listed)
    assert tools_of(stack) == ["pomodoro.start"]
    (row,) = [r for r in read_inventories(stack.data_dir) if r["conversation_id"] == CONVERSATION]
    reasons = {v["method"]: v["reason"] for v in row["visibility"]}
    assert reasons["pomodoro.status"].startswith("denied by tool policy")

    # An allow list that the deny rule overrides: deny beats allow.
    policy.write_text(json.dumps({"allow": ["pomodoro/*"], "deny": ["*/pomodoro.start"]}))
    narrowed = await new_revision(stack, denied)
    assert tools_of(stack) == ["pomodoro.status"]

    policy.write_text("{not json")  # a broken policy hides everything, never widens
    broken = await new_revision(stack, narrowed)
    assert tools_of(stack) == []

    # Kill -9 the whole runtime: the revision never goes back or repeats.
    assert stack.runtime is not None
    stack.runtime.kill9()
    policy.unlink()
    await stack.start_runtime()
    restored = await new_revision(stack, broken)
    assert tools_of(stack) == ["pomodoro.start", "pomodoro.status"]
    published = [int(e["payload"]["revision"]) for e in sent(stack, "lineup.inventory")]
    assert published == sorted(set(published)) and published[-1] == restored
