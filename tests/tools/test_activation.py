"""Calls that need their app started wait for it and run in arrival order; an activation
that fails refuses every call that waited on it; an app disabled or updated under a running
call ends it with its definite code; a call made while the runtime was down is answered
once it is back, and one made before a tool router's restart is still current after it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path

from actors.app_manager.registry import LIVE_STATES, read_apps
from tests.app_manager.conftest import lineup
from tests.runtime.helpers import Stack, wait_for

from .helpers import (
    app,
    call_row,
    final_of,
    finals,
    new_revision,
    revision_of,
    sent,
    toolbox_ready,
    tools_of,
)


def _app_side_order(stack: Stack) -> list[str]:
    """The order in which the toolbox's process took its calls (its own log)."""
    path = stack.data_dir / "apps" / "toolbox" / "app.db"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [row[0] for row in db.execute("SELECT call_id FROM tool_calls ORDER BY rowid")]
    finally:
        db.close()


async def test_early_calls_wait_for_the_launch_and_run_in_order(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    agent = await toolbox_ready(stack, toolbox)
    ids = [f"call_early{n}" for n in range(6)]
    for call_id in ids:  # the app is not running: the first call launches it
        await agent.client.submit(agent.invoke(call_id, "box.count"))
    rows = [await final_of(stack, call_id) for call_id in ids]
    assert [r["state"] for r in rows] == ["succeeded"] * len(ids)
    assert _app_side_order(stack) == ids
    starting = {e["correlation"]["call_id"] for e in sent(stack, "lineup.tool.starting")}
    ready = {e["correlation"]["call_id"] for e in sent(stack, "lineup.tool.activation_ready")}
    assert ids[0] in starting and starting == ready
    # A query that needs no activation of its own runs at once now that the app is up.
    row = await agent.call("call_after", "box.echo", arguments={"value": "x"})
    assert [h["event"] for h in row["history"]] == ["accepted", "running", "succeeded"]


async def test_a_failed_activation_refuses_the_calls_that_waited(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    agent = await toolbox_ready(stack, toolbox)
    # The user stops trusting the publisher: the app may no longer start.
    for key in (stack.data_dir / "trusted_keys").iterdir():
        key.unlink()
    ids = [f"call_doomed{n}" for n in range(3)]
    for call_id in ids:
        await agent.client.submit(agent.invoke(call_id, "box.count"))
    rows = [await final_of(stack, call_id) for call_id in ids]
    assert {(r["state"], r["code"]) for r in rows} == {("failed", "bundle_untrusted_key")}
    failed = [e["correlation"]["call_id"] for e in sent(stack, "lineup.tool.activation_failed")]
    assert sorted(failed) == ids
    assert all(len(finals(stack, call_id)) == 1 for call_id in ids)


async def test_disable_and_update_end_running_calls(
    stack: Stack, toolbox: tuple[Path, Path], toolbox_update: Path
) -> None:
    agent = await toolbox_ready(stack, toolbox)
    await agent.client.submit(agent.invoke("call_sleep1", "box.sleep"))
    await wait_for(
        lambda: (call_row(stack, "call_sleep1") or {}).get("state") == "running", 30, "running"
    )
    app(stack, "update", "toolbox", toolbox_update)
    row = await final_of(stack, "call_sleep1")
    assert (row["state"], row["code"]) == ("failed", "app_version_mismatch")

    revision = await new_revision(stack, 0)
    await agent.client.submit(agent.invoke("call_sleep2", "box.sleep", revision=revision))
    await wait_for(
        lambda: (call_row(stack, "call_sleep2") or {}).get("state") == "running", 30, "running"
    )
    app(stack, "disable", "toolbox")
    row = await final_of(stack, "call_sleep2")
    assert (row["state"], row["code"]) == ("failed", "app_disabled")
    assert len(finals(stack, "call_sleep1")) == len(finals(stack, "call_sleep2")) == 1


async def test_a_call_made_while_the_runtime_is_down(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    agent = await toolbox_ready(stack, toolbox)
    assert stack.runtime is not None
    stack.runtime.kill9()
    await agent.client.submit(agent.invoke("call_offline", "box.count"))
    await stack.start_runtime()
    row = await final_of(stack, "call_offline", timeout=60)
    assert row["state"] == "succeeded" and row["output"] == {"n": 1}
    assert len(finals(stack, "call_offline")) == 1


async def test_a_restart_publishes_no_state_that_has_passed(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    agent = await toolbox_ready(stack, toolbox)
    runtime = stack.runtime
    assert runtime is not None
    revision = revision_of(stack)
    # The app manager's views of a disable and an enable reach a tool router that cannot
    # take them, which then dies: its next run reads the registry (enabled) and is given
    # both views again, the disable first.
    pid = runtime.pid_of("tool_router")
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        app(stack, "disable", "toolbox")
        app(stack, "enable", "toolbox")
    finally:
        os.kill(pid, signal.SIGKILL)
    runtime.wait_actor("tool_router", restarts=1)
    # A call on the revision the agent held before: the views come before it in the tool
    # router's mailbox, and a passing state published between would make it stale.
    row = await agent.call("call_after", "box.echo", arguments={"value": "x"}, revision=revision)
    assert row["state"] == "succeeded", row
    assert revision_of(stack) == revision


async def test_an_operators_view_of_the_apps_orders_none_of_the_app_managers(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    """The operator may hand the tool router a view by hand; whatever version it claims,
    the app manager's next view is still taken."""
    await toolbox_ready(stack, toolbox)
    revision = revision_of(stack)
    registry = read_apps(stack.data_dir)
    view = {
        "records": registry["records"],
        "instances": [i for i in registry["instances"] if i["state"] in LIVE_STATES],
        "settings": {"focus_stack": registry["settings"].get("focus_stack", [])},
        "version": [2**31, 0],
    }
    body = json.dumps(view)
    code, out, err = lineup(
        "debug",
        "send",
        "tool_router",
        "tool_router.apps",
        "--body",
        body,
        "--data-dir",
        stack.data_dir,
    )
    assert code == 0, out + err
    assert revision_of(stack) == revision  # the same apps: no new revision
    app(stack, "disable", "toolbox")
    await new_revision(stack, revision)
    assert "box.count" not in tools_of(stack)
