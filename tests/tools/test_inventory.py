"""The inventory follows the registry, and a call is checked against it in the contract's
order: the revision, the tool's visibility, the arguments. The revision only goes forward:
across policy changes, a kill -9 of the whole runtime, and a data dir an older runtime left
with the tool router's rows in `runtime.db`."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import trio

from actors.store import open_db as open_runtime_db
from actors.tool_router import read_inventories, read_tool_calls
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
    await stack.audit_of(row["envelope_id"])
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
    published = await _given_up_to(stack, again)
    assert published == sorted(set(published)) and again == revision_of(stack)


async def _given_up_to(stack: Stack, revision: int) -> list[int]:
    """The revisions the agent was given, once the last of them is `revision`."""

    def given() -> list[int] | None:
        published = [int(e["payload"]["revision"]) for e in sent(stack, "lineup.inventory")]
        return published if published and published[-1] == revision else None

    return await wait_for(given, 30, f"revision {revision} at the AppServer")


# What a runtime from before the tool router had its own file left in `runtime.db`.
OLDER_REVISION = 40
_OLDER_TABLES = (
    "CREATE TABLE tool_calls (call_id TEXT PRIMARY KEY, envelope_id TEXT,"
    " conversation_id TEXT, agent_id TEXT, app_scope TEXT, method TEXT, contract_version TEXT,"
    " arguments TEXT, revision INTEGER, instance_id TEXT, state TEXT, code TEXT, detail TEXT,"
    " output TEXT, history TEXT, created_ms INTEGER, updated_ms INTEGER, deadline_ms INTEGER)",
    "CREATE TABLE tool_inventories (conversation_id TEXT PRIMARY KEY, agent_id TEXT,"
    " revision INTEGER, hash TEXT, payload TEXT, visibility TEXT, published_ms INTEGER)",
    "CREATE TABLE tool_state (name TEXT PRIMARY KEY, value INTEGER)",
)


def _an_older_data_dir(data_dir: Path) -> None:
    """The store's `runtime.db` with a finished call, another conversation's inventory and
    the revision counter in the tables the store kept them in before."""
    open_runtime_db(data_dir).close()
    with closing(sqlite3.connect(data_dir / "runtime.db")) as db, db:
        for table in _OLDER_TABLES:
            db.execute(table)
        db.execute(
            "INSERT INTO tool_calls (call_id, envelope_id, conversation_id, agent_id, app_scope,"
            " method, state, history, created_ms) VALUES ('call_before', 'env_before',"
            " 'conv-before', 'demo', 'pomodoro', 'pomodoro.status', 'succeeded', '[]', 1)"
        )
        db.execute(
            "INSERT INTO tool_inventories (conversation_id, agent_id, revision, hash, payload)"
            " VALUES ('conv-before', 'demo', ?, '', '{\"tools\": []}')",
            (OLDER_REVISION,),
        )
        db.execute("INSERT INTO tool_state VALUES ('revision', ?)", (OLDER_REVISION,))


async def test_policy_changes_and_restarts_move_the_revision_forward(
    stack: Stack, bundles: Bundles
) -> None:
    # The tool router moves an older runtime's rows into its own file once, and goes on
    # from the revision they reached.
    _an_older_data_dir(stack.data_dir)
    await stack.start_appserver()
    await stack.start_runtime(env={"LINEUP_LOG_LEVEL": "INFO"})
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, OLDER_REVISION)
    assert [c["call_id"] for c in read_tool_calls(stack.data_dir)] == ["call_before"]
    assert {r["conversation_id"] for r in read_inventories(stack.data_dir)} >= {"conv-before"}
    moved = "moved the tool router's rows from runtime.db into tool_router.db"
    log = stack.data_dir / "logs" / "tool_router.log"
    assert log.read_text().count(moved) == 1
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
    await stack.start_runtime(env={"LINEUP_LOG_LEVEL": "INFO"})
    restored = await new_revision(stack, broken)
    assert tools_of(stack) == ["pomodoro.start", "pomodoro.status"]
    published = await _given_up_to(stack, restored)
    assert published == sorted(set(published))
    assert log.read_text().count(moved) == 1  # once: the start after the kill did not
