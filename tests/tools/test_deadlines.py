"""Deadline operations through the real runtime: an app hands a call to the runtime until a
deadline (the timers app, built, signed and installed like any app), and the tool router
alone ends it, once: at the deadline with the runtime's result (also after the app, the
tool router, the store and the whole runtime were killed across it), or interrupted by the
agent or the user, whichever was first. Every assertion reads a record the runtime kept:
runtime.db (calls, operations, outbox), the AppServer's store, the chat's log."""

from __future__ import annotations

import json
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.app_manager.registry import read_apps
from actors.tool_router import read_tool_deadlines
from apps.chat import history
from contracts import utc_timestamp
from lineup.terminal_chat import parse_line
from lineup.ui_session import UiSession
from tests.app_manager.conftest import lineup
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .helpers import (
    Agent,
    app,
    call_row,
    conversation_open,
    final_of,
    finals,
    new_revision,
    sent,
    stream_finals,
)


@pytest.fixture(scope="session")
def timers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the signed timers bundle, its publisher's public key)."""
    root = tmp_path_factory.mktemp("timers")
    code, _, err = lineup("app", "keygen", "--out", root / "keys", "--name", "timekeeper")
    assert code == 0, err
    bundle = root / "timers.bundle"
    code, _, err = lineup("app", "build", REPO_ROOT / "tests" / "tools" / "timers", "--out", bundle)
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", root / "keys" / "timekeeper.key")
    assert code == 0, err
    return bundle, root / "keys" / "timekeeper.pub"


async def _timers_ready(stack: Stack, timers: tuple[Path, Path]) -> Agent:
    client, first = await conversation_open(stack)
    bundle, key = timers
    (stack.data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(key, stack.data_dir / "trusted_keys")
    app(stack, "install", bundle)
    app(stack, "enable", "timers")
    await new_revision(stack, first)
    return Agent(stack, client, "timers")


def _operation(stack: Stack, call_id: str) -> dict[str, Any] | None:
    return read_tool_deadlines(stack.data_dir).get(call_id)


async def _started(stack: Stack, call_id: str) -> dict[str, Any]:
    """The call's operation once the runtime has started it."""

    def running() -> dict[str, Any] | None:
        operation = _operation(stack, call_id)
        return operation if operation and operation["state"] == "running" else None

    return await wait_for(running, 30, f"the deadline operation of {call_id} started")


def _moment(ms: int) -> str:
    return utc_timestamp(datetime.fromtimestamp(ms / 1000, UTC))


def _now_ms() -> int:
    return int(time.time() * 1000)


def _started_progress(stack: Stack, call_id: str) -> list[dict[str, Any]]:
    return [
        env
        for env in sent(stack, "lineup.tool.progress")
        if env["correlation"]["call_id"] == call_id and env["payload"].get("stage") == "started"
    ]


async def _one_final_streamed(stack: Stack, call_id: str) -> list[str]:
    """What the agent is given as the call's finals, once it has one."""
    await wait_for(lambda: call_id in stream_finals(stack), 30, f"{call_id}'s final streamed")
    return stream_finals(stack)[call_id]


async def _one_outcome(stack: Stack, row: dict[str, Any]) -> None:
    """The call has one final, the one recorded; a cancel that came after it got that same
    outcome again (in reply to the cancel), and the agent is given nothing else."""
    call_id = row["call_id"]
    await _one_final_streamed(stack, call_id)
    sent_finals = finals(stack, call_id)
    assert [f["correlation"]["reply_to"] for f in sent_finals].count(row["envelope_id"]) == 1
    assert len({(f["type"], str(f["payload"])) for f in sent_finals}) == 1, sent_finals

    def streamed() -> list[str] | None:
        found = stream_finals(stack)[call_id]
        return found if len(found) == len(sent_finals) else None

    types = await wait_for(streamed, 30, f"every final of {call_id} streamed")
    assert len(set(types)) == 1, types


def _told(stack: Stack, call_id: str) -> list[str]:
    """What the timers app was told of the call's operation, in order (its own record)."""
    path = stack.data_dir / "apps" / "timers" / "told.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [line.split()[1] for line in lines if line.split()[0] == call_id]


def _user_stops(stack: Stack, call_id: str) -> str:
    """The user stops the call in the chat (a UI action through the host actor)."""
    body = {"kind": "stop", "conversation_id": CONVERSATION, "call_id": call_id}
    return UiSession(stack.data_dir, session_id="test").act(body)


async def _shown_open(stack: Stack, call_id: str) -> None:
    """The chat shows the call, not ended: where the user can stop it."""

    def shown() -> bool:
        items = history(stack.data_dir, CONVERSATION)["timeline"]
        item = next((i for i in items if i["id"] == call_id), None)
        return item is not None and item["state"] not in ("succeeded", "failed")

    await wait_for(shown, 30, f"the chat showing {call_id}")


def _cancel(agent: Agent, call_id: str) -> dict[str, Any]:
    return agent.client.envelope(
        "lineup.tool.cancel",
        CONVERSATION,
        {"reason": "the agent changed its mind"},
        app_scope=agent.app_scope,
        target_kind="runtime",
        call_id=call_id,
    )


async def test_the_runtime_ends_the_call_at_its_deadline_with_one_result(
    stack: Stack, timers: tuple[Path, Path]
) -> None:
    agent = await _timers_ready(stack, timers)
    # Long enough for the checks below to see it running on a loaded machine.
    await agent.client.submit(agent.invoke("call_t1", "timer.run", {"seconds": 5}))
    operation = await _started(stack, "call_t1")
    assert operation["duration_ms"] == 5000 and operation["display"] == {"seconds": 5}
    assert operation["ends_ms"] == operation["started_ms"] + 5000
    assert (call_row(stack, "call_t1") or {})["state"] == "deadline"
    # The agent is told it started, and when it ends, by the runtime, under the operation.
    (progress,) = await wait_for(
        lambda: _started_progress(stack, "call_t1"), 30, "the started progress"
    )
    assert progress["payload"] == {"stage": "started", "ends_at": _moment(operation["ends_ms"])}
    assert progress["sender"] == {"kind": "runtime", "id": "runtime:tool_router"}
    assert progress["scope"]["operation_id"] == operation["operation_id"]
    # The app reads its operation back from the runtime.
    listed = await agent.call("call_l1", "timer.list")
    assert [(t["call_id"], t["state"]) for t in listed["output"]["timers"]] == [
        ("call_t1", "running")
    ]
    # The operator sees the call waiting on its deadline.
    code, out, err = lineup("tools", "calls", "--data-dir", stack.data_dir)
    assert code == 0, err
    line = next(line for line in out.splitlines() if "call_t1" in line)
    assert "deadline" in line and "ends " in line, out
    code, out, err = lineup(
        "tools", "calls", "--state", "deadline", "--json", "--data-dir", stack.data_dir
    )
    assert code == 0, err
    (shown,) = json.loads(out)
    assert (shown["call_id"], shown["deadline"]["ends_ms"]) == ("call_t1", operation["ends_ms"])

    row = await final_of(stack, "call_t1")
    assert row["state"] == "succeeded", row
    output = row["output"]
    ends_at = _moment(operation["ends_ms"])
    assert (output["state"], output["ends_at"], output["ended_at"]) == (
        "finished",
        ends_at,
        ends_at,
    )
    assert output["started_at"] == _moment(operation["started_ms"])
    assert output["noticed_at"] >= ends_at
    (final,) = finals(stack, "call_t1")
    assert final["sender"] == {"kind": "runtime", "id": "runtime:tool_router"}
    assert await _one_final_streamed(stack, "call_t1") == ["lineup.tool.result"]
    events = [h["event"] for h in row["history"]]
    assert events[-3:] == ["deadline", "started", "succeeded"], events
    ended = _operation(stack, "call_t1") or {}
    assert (ended["state"], ended["ended_by"]) == ("finished", "deadline")
    # Its app was told of the start and the end, each once, to show them.
    await wait_for(lambda: len(_told(stack, "call_t1")) >= 2, 30, "the app told of the end")
    assert _told(stack, "call_t1") == ["running", "finished"]


async def test_a_deadline_only_where_the_tool_declares_it_and_in_front_when_it_must_be(
    stack: Stack, timers: tuple[Path, Path]
) -> None:
    agent = await _timers_ready(stack, timers)
    # A tool whose output schema cannot take the runtime's result gets no deadline.
    row = await agent.call("call_misfit", "timer.misfit", arguments={"seconds": 1})
    assert (row["state"], row["code"]) == ("failed", "handler_failed"), row
    assert _operation(stack, "call_misfit") is None
    assert "output schema does not take" in (await stack.audit_of(row["envelope_id"]))["detail"]

    # Only a tool declared `handling: runtime_operation` hands its call over, and such a
    # tool's result is the runtime's alone: either way wrong ends the call, audited.
    wrong = {
        "call_direct": ("timer.direct", "is not declared handling runtime_operation"),
        "call_answers": ("timer.answers", "whose result is the runtime's"),
    }
    for call_id, (method, why) in wrong.items():
        row = await agent.call(call_id, method, arguments={"seconds": 1})
        assert (row["state"], row["code"]) == ("failed", "handler_failed"), row
        assert why in (await stack.audit_of(row["envelope_id"]))["detail"]
        assert _operation(stack, call_id) is None

    # A foreground tool starts its deadline once its app is in front; its `started` says it
    # is ready, so the agent gets no separate receipt for the activation.
    row = await agent.call("call_front", "timer.front", arguments={"seconds": 0.5})
    assert row["state"] == "succeeded", row
    front = _operation(stack, "call_front") or {}
    assert front["instance_id"] == f"timers:{CONVERSATION}"
    assert front["ends_ms"] - front["started_ms"] == 500
    events = [h["event"] for h in row["history"]]
    assert events.index("activation_ready") < events.index("started"), events
    receipts = [
        env["type"]
        for env in stack.given()
        if env.get("correlation", {}).get("call_id") == "call_front"
    ]
    assert receipts == [
        "lineup.tool.accepted",
        "lineup.tool.starting",
        "lineup.tool.progress",
        "lineup.tool.result",
    ], receipts


async def test_the_deadline_holds_across_kills_and_a_restart_past_its_end(
    stack: Stack, timers: tuple[Path, Path]
) -> None:
    agent = await _timers_ready(stack, timers)
    await agent.client.submit(agent.invoke("call_k1", "timer.run", {"seconds": 2}))
    operation = await _started(stack, "call_k1")
    for victim in ("app.timers", "tool_router", "store"):
        assert stack.kill(victim), victim
    runtime = stack.runtime
    assert runtime is not None
    runtime.kill9()
    # The deadline passes while nothing of the runtime runs.
    down_until = operation["ends_ms"] + 1000
    await wait_for(lambda: _now_ms() > down_until, 30, "the deadline passed during the outage")
    assert (call_row(stack, "call_k1") or {})["state"] == "deadline"
    await stack.start_runtime()

    row = await final_of(stack, "call_k1")
    assert row["state"] == "succeeded", row
    ends_at = _moment(operation["ends_ms"])
    # It says when it really ended, and when the runtime noticed: after the restart.
    assert (row["output"]["ends_at"], row["output"]["ended_at"]) == (ends_at, ends_at)
    assert row["output"]["noticed_at"] > _moment(down_until)
    assert len(finals(stack, "call_k1")) == 1
    assert await _one_final_streamed(stack, "call_k1") == ["lineup.tool.result"]
    # The app, killed too, is told of the end once it runs again.
    await wait_for(lambda: "finished" in _told(stack, "call_k1"), 30, "the app told of the end")

    # The agent cancels one whose deadline passed while the runtime was down: it ended
    # then, with its result, and the cancel gets that outcome.
    await agent.client.submit(agent.invoke("call_late", "timer.run", {"seconds": 0.5}))
    late = await _started(stack, "call_late")
    runtime.kill9()
    await wait_for(lambda: _now_ms() > late["ends_ms"] + 500, 30, "the deadline passed")
    cancel = _cancel(agent, "call_late")
    await agent.client.submit(cancel)
    await stack.start_runtime()
    row = await final_of(stack, "call_late")
    assert row["state"] == "succeeded", row
    assert row["output"]["ended_at"] == _moment(late["ends_ms"])
    await wait_for(lambda: len(finals(stack, "call_late")) == 2, 30, "the cancel answered")
    first, answer = finals(stack, "call_late")
    assert answer["correlation"]["reply_to"] == cancel["id"]
    assert (first["type"], answer["payload"]) == ("lineup.tool.result", first["payload"])

    # One that runs out while the tool router and its app are down, the runtime up.
    await agent.client.submit(agent.invoke("call_k2", "timer.run", {"seconds": 0.5}))
    await _started(stack, "call_k2")
    assert stack.kill("tool_router") and stack.kill("app.timers")
    row = await final_of(stack, "call_k2")
    assert row["state"] == "succeeded", row
    assert len(finals(stack, "call_k2")) == 1
    assert await _one_final_streamed(stack, "call_k2") == ["lineup.tool.result"]


async def test_interrupts_racing_the_deadline_leave_one_outcome(
    stack: Stack, timers: tuple[Path, Path]
) -> None:
    agent = await _timers_ready(stack, timers)

    # The agent's cancel and the user's stop, both at the deadline: one outcome.
    await agent.client.submit(agent.invoke("call_r1", "timer.run", {"seconds": 1}))
    operation = await _started(stack, "call_r1")
    await _shown_open(stack, "call_r1")
    await wait_for(lambda: _now_ms() >= operation["ends_ms"] - 50, 30, "the deadline about to pass")
    async with trio.open_nursery() as racers:
        racers.start_soon(agent.client.submit, _cancel(agent, "call_r1"))
        racers.start_soon(trio.to_thread.run_sync, _user_stops, stack, "call_r1")
    row = await final_of(stack, "call_r1")
    assert (row["state"], row["code"]) in (("succeeded", None), ("failed", "cancelled_by_user"))
    await _one_outcome(stack, row)

    # The agent stops it through its app's stop tool; what comes after changes nothing.
    await agent.client.submit(agent.invoke("call_r2", "timer.run", {"seconds": 60}))
    await _started(stack, "call_r2")
    stopped = await agent.call("call_stop", "timer.stop")
    assert stopped["output"] == {"stopped": ["call_r2"]}
    row = await final_of(stack, "call_r2")
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    assert row["detail"].startswith("interrupted by the agent (timer.stop, call call_stop)")
    ended = _operation(stack, "call_r2") or {}
    assert ended["state"] == "interrupted" and ended["ended_ms"] < ended["ends_ms"]
    await trio.to_thread.run_sync(_user_stops, stack, "call_r2")
    again = _cancel(agent, "call_r2")
    await agent.client.submit(again)
    await wait_for(lambda: len(finals(stack, "call_r2")) == 2, 30, "the outcome sent again")
    first, repeated = finals(stack, "call_r2")
    assert repeated["payload"] == first["payload"]
    assert repeated["correlation"]["reply_to"] == again["id"]
    assert (call_row(stack, "call_r2") or {})["detail"] == row["detail"]

    # The user stops one in the chat.
    await agent.client.submit(agent.invoke("call_r3", "timer.run", {"seconds": 60}))
    await _started(stack, "call_r3")
    await _shown_open(stack, "call_r3")
    await trio.to_thread.run_sync(_user_stops, stack, "call_r3")
    row = await final_of(stack, "call_r3")
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    assert row["detail"].startswith("interrupted by the user; it was to end at ")
    assert await _one_final_streamed(stack, "call_r3") == ["lineup.tool.error"]

    # The agent and the user at once, long before the deadline: the first one stands.
    await agent.client.submit(agent.invoke("call_r4", "timer.run", {"seconds": 60}))
    await _started(stack, "call_r4")
    await _shown_open(stack, "call_r4")
    async with trio.open_nursery() as racers:
        racers.start_soon(agent.client.submit, _cancel(agent, "call_r4"))
        racers.start_soon(trio.to_thread.run_sync, _user_stops, stack, "call_r4")
    row = await final_of(stack, "call_r4")
    assert row["code"] == "cancelled_by_user"
    by = (_operation(stack, "call_r4") or {})["ended_by"]
    assert by in ("the agent", "the user"), by
    assert row["detail"].startswith(f"interrupted by {by};")
    await _one_outcome(stack, row)


def test_the_terminal_chat_stops_the_running_call_or_the_one_named() -> None:
    def tool(call_id: str, state: str) -> dict[str, Any]:
        return {"id": call_id, "kind": "tool", "state": state, "sender": "runtime:tools"}

    def stop(call_id: str) -> dict[str, Any]:
        return {"kind": "stop", "conversation_id": CONVERSATION, "call_id": call_id}

    ended = {"timeline": [tool("call_a", "succeeded")]}
    assert parse_line("/stop", ended, CONVERSATION) == "no tool call is running"
    one = {"timeline": [tool("call_a", "failed"), tool("call_b", "running")]}
    assert parse_line("/stop", one, CONVERSATION) == stop("call_b")
    two = {"timeline": [tool("call_b", "running"), tool("call_c", "starting")]}
    assert parse_line("/stop", two, CONVERSATION) == (
        "2 tool calls are running; say which: /stop CALL, one of call_b, call_c"
    )
    assert parse_line("/stop call_c", two, CONVERSATION) == stop("call_c")
    assert parse_line("/stop call_a", two, CONVERSATION) == (
        "call_a is not a running tool call; running: call_b, call_c"
    )
    assert parse_line("/stpo", two, CONVERSATION) == (
        "unknown command /stpo (did you mean /stop?); /help lists the commands"
    )


async def test_a_call_that_ends_leaves_the_front_to_a_call_still_running_there(
    stack: Stack, timers: tuple[Path, Path]
) -> None:
    agent = await _timers_ready(stack, timers)
    instance = f"timers:{CONVERSATION}"

    def front() -> str:
        return str((read_apps(stack.data_dir)["settings"].get("focus_stack") or [""])[-1])

    # A foreground timer brings its app in front of the chat, which it gives back at its end.
    await agent.client.submit(agent.invoke("call_first", "timer.front", {"seconds": 60}))
    await _started(stack, "call_first")
    assert front() == instance
    # A call that runs on that instance, in front, stops the first and starts its own: the
    # first one's end leaves the front to it, so it starts at once instead of waiting for a
    # front it would never get back.
    await agent.client.submit(agent.invoke("call_second", "timer.replace", {"seconds": 60}))
    row = await final_of(stack, "call_first")
    assert row["code"] == "cancelled_by_user"
    assert row["detail"].startswith("interrupted by the agent (timer.replace, call call_second)")
    await _started(stack, "call_second")
    assert front() == instance
    handed = [h for h in (call_row(stack, "call_second") or {})["history"] if h.get("restores")]
    assert [(h["restores"], h["from_call"]) for h in handed] == [("chat:main", "call_first")]
    # Its end gives the chat back.
    await agent.client.submit(_cancel(agent, "call_second"))
    row = await final_of(stack, "call_second")
    assert row["code"] == "cancelled_by_user"
    await wait_for(lambda: front() == "chat:main", 30, "the chat back in front")
