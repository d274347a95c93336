"""Agent tools from both ends of the command line, and the agent client under them.

- `lineup tools inventory|calls` read a real `tool_router.db` (its schema made by the tool
  router's own `open_db`), read-only, with a connection of the "runtime" still open on it;
- `AgentClient.call` / `inventory` / `cancel` and the demo agent's "focus N" against a
  real AppServer on loopback, the test playing the runtime with a second link (role
  runtime) that publishes inventories and answers calls with receipts and results;
- `lineup agent inventory|call` the same way, each command running in a worker thread.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.tool_router import open_db
from contracts import derive_message_id, validate_message
from lineup.agent_cmd import main as agent_main
from lineup.cli import main as lineup_main
from lineup.tools_cmd import register as register_tools
from link import Link
from peers.agent import AgentClient, AgentError, AgentMessage, run_demo_agent
from peers.appserver import AppServer
from tests.appserver.helpers import TIMEOUT, collect, envelope, runtime_link, user_text

CONVERSATION = "conv-1"
START: dict[str, Any] = {
    "app_scope": "pomodoro",
    "method": "pomodoro.start",
    "contract_version": "1",
    "title": "Start a focus timer",
    "input_schema": {
        "type": "object",
        "properties": {"minutes": {"type": "integer", "minimum": 1, "maximum": 120}},
        "required": ["minutes"],
        "additionalProperties": False,
    },
    "output_schema": {
        "type": "object",
        "properties": {"state": {"type": "string"}, "ends_at": {"type": "string"}},
        "required": ["state"],
    },
    "timeout_ms": 5000,
}
BOARD: dict[str, Any] = {
    "app_scope": "whiteboard",
    "method": "board.create",
    "contract_version": "2",
    "input_schema": {"type": "object"},
    "output_schema": {"type": "object"},
}

StartAppServer = Callable[..., Awaitable[AppServer]]


# --- the runtime's side, played by the test -----------------------------------------------


def inventory(
    revision: int, tools: list[dict[str, Any]], *, conversation: str = CONVERSATION
) -> dict[str, Any]:
    return envelope(
        "lineup.inventory",
        {
            "revision": str(revision),
            "tools": tools,
            "apps": [],
            "components": [],
            "capabilities": [],
        },
        conversation=conversation,
        sender=("runtime", "runtime:tool_router"),
        target=("runtime", "runtime"),
        correlation={"inventory_revision": str(revision)},
    )


def receipt(
    invoke: dict[str, Any],
    type_: str,
    payload: dict[str, Any],
    *,
    sender: tuple[str, str] = ("runtime", "runtime:tool_router"),
) -> dict[str, Any]:
    """A `lineup.tool.*` envelope about the call `invoke`, as the runtime sends it."""
    return envelope(
        type_,
        payload,
        conversation=invoke["scope"]["conversation_id"],
        sender=sender,
        target=("runtime", invoke["scope"]["app_scope"]),
        correlation={"call_id": invoke["correlation"]["call_id"], "reply_to": invoke["id"]},
    )


async def invokes(runtime: Link, count: int) -> list[dict[str, Any]]:
    got = await collect(runtime, count, keep=lambda m: m["type"] == "lineup.tool.invoke")
    return [received.message for received in got]


async def answer(runtime: Link, invoke: dict[str, Any], *steps: tuple[str, dict[str, Any]]) -> None:
    for type_, payload in steps:
        result = await runtime.submit(receipt(invoke, type_, payload))
        assert result.status == "accepted", result


@pytest.fixture
def start_appserver(nursery: trio.Nursery, tmp_path: Path) -> StartAppServer:
    async def start(**options: Any) -> AppServer:
        server = AppServer(tmp_path / "appserver", **options)
        await nursery.start(server.serve)
        return server

    return start


@contextlib.asynccontextmanager
async def agent_of(server: AppServer, **options: Any) -> AsyncIterator[AgentClient]:
    client = AgentClient(
        server.url,
        agent_id="demo",
        token=server.credentials.agent_token,
        backoff_initial=0.01,
        **options,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(client.run)
        with trio.fail_after(TIMEOUT):
            await client.wait_caught_up()
        yield client
        nursery.cancel_scope.cancel()


def kinds(events: list[AgentMessage]) -> list[str]:
    return [event.type.removeprefix("lineup.tool.") for event in events]


# --- `lineup tools ...` on a tool_router.db -----------------------------------------------------

NOW_MS = 1_800_000_000_000


def _call_row(call_id: str, state: str, created_ms: int, **extra: Any) -> dict[str, Any]:
    row = {
        "call_id": call_id,
        "envelope_id": derive_message_id("01KZB887ZR6TZXR3XB9NDY0QW5", created_ms % 1000),
        "conversation_id": CONVERSATION,
        "agent_id": "demo",
        "app_scope": "pomodoro",
        "method": "pomodoro.start",
        "contract_version": "1",
        "arguments": json.dumps({"minutes": 25}),
        "revision": 4,
        "instance_id": None,
        "state": state,
        "code": None,
        "detail": None,
        "output": None,
        "history": json.dumps([{"at_ms": created_ms, "event": "accepted"}]),
        "created_ms": created_ms,
        "updated_ms": created_ms,
        "deadline_ms": created_ms + 5000,
    }
    return {**row, **extra}


def _insert(db: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    columns = ", ".join(row)
    marks = ", ".join("?" * len(row))
    db.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(row.values()))


@pytest.fixture
def tool_db(tmp_path: Path) -> tuple[Path, sqlite3.Connection]:
    """A tool_router.db with three calls and two published inventories; its writer
    connection stays open, as a running runtime's would."""
    data_dir = tmp_path / "data"
    db = open_db(data_dir, synchronous="FULL")
    _insert(
        db,
        "tool_calls",
        _call_row(
            "call_old",
            "succeeded",
            NOW_MS - 3_600_000,
            instance_id="pomodoro:conv-1",
            output=json.dumps({"state": "running"}),
        ),
    )
    _insert(
        db,
        "tool_calls",
        _call_row(
            "call_failed",
            "failed",
            NOW_MS - 60_000,
            code="app_disabled",
            detail="the app is disabled",
        ),
    )
    _insert(
        db,
        "tool_calls",
        _call_row("call_new", "running", NOW_MS - 1000, conversation_id="conv-2"),
    )
    visibility = [
        {
            "app_scope": "pomodoro",
            "method": "pomodoro.start",
            "contract_version": "1",
            "visible": True,
            "reason": "visible",
        },
        {
            "app_scope": "pomodoro",
            "method": "pomodoro.stop",
            "contract_version": "1",
            "visible": False,
            "reason": "its app may not be launched for it and has no instance here",
        },
    ]
    for conversation, revision in ((CONVERSATION, 4), ("conv-2", 3)):
        _insert(
            db,
            "tool_inventories",
            {
                "conversation_id": conversation,
                "agent_id": "demo",
                "revision": revision,
                "hash": "ab" * 32,
                "payload": json.dumps({"revision": str(revision), "tools": [START]}),
                "visibility": json.dumps(visibility),
                "published_ms": NOW_MS - 120_000,
            },
        )
    return data_dir, db


def _tools(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = lineup_main(["tools", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_tools_calls_lists_the_newest_first_and_filters(
    tool_db: tuple[Path, sqlite3.Connection], capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, _db = tool_db
    code, out, _ = _tools(capsys, "calls", "--data-dir", str(data_dir), "--json")
    assert code == 0
    rows = json.loads(out)
    assert [row["call_id"] for row in rows] == ["call_new", "call_failed", "call_old"]
    assert rows[2]["history"] == [{"at_ms": NOW_MS - 3_600_000, "event": "accepted"}]
    assert rows[2]["output"] == {"state": "running"}
    assert rows[2]["arguments"] == {"minutes": 25}
    assert (rows[1]["state"], rows[1]["code"]) == ("failed", "app_disabled")

    code, out, _ = _tools(
        capsys, "calls", "--data-dir", str(data_dir), "--state", "failed", "--json"
    )
    assert [row["call_id"] for row in json.loads(out)] == ["call_failed"]
    code, out, _ = _tools(
        capsys, "calls", "--data-dir", str(data_dir), "--conversation", CONVERSATION, "--json"
    )
    assert [row["call_id"] for row in json.loads(out)] == ["call_failed", "call_old"]
    code, out, _ = _tools(capsys, "calls", "--data-dir", str(data_dir), "--limit", "1", "--json")
    assert [row["call_id"] for row in json.loads(out)] == ["call_new"]
    code, out, _ = _tools(capsys, "calls", "--data-dir", str(data_dir), "--state", "waiting")
    assert (code, out.strip()) == (0, "no tool calls (state waiting)")

    code, out, _ = _tools(capsys, "calls", "--data-dir", str(data_dir))
    assert code == 0
    lines = out.splitlines()
    failed = next(line for line in lines if "call_failed" in line)
    for cell in ("conv-1", "pomodoro/pomodoro.start", "failed", "app_disabled"):
        assert cell in failed, failed
    assert out.index("call_new") < out.index("call_failed") < out.index("call_old")


def test_tools_inventory_shows_every_tool_with_its_visibility(
    tool_db: tuple[Path, sqlite3.Connection], capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, _db = tool_db
    code, out, _ = _tools(capsys, "inventory", "--data-dir", str(data_dir), "--json")
    assert code == 0
    rows = json.loads(out)
    assert [(row["conversation_id"], row["revision"]) for row in rows] == [
        (CONVERSATION, 4),
        ("conv-2", 3),
    ]
    assert rows[0]["payload"]["tools"] == [START]
    assert [entry["visible"] for entry in rows[0]["visibility"]] == [True, False]
    assert rows[0]["published_ms"] == NOW_MS - 120_000
    assert rows[0]["published"].endswith("Z")

    code, out, _ = _tools(
        capsys, "inventory", "--data-dir", str(data_dir), "--conversation", CONVERSATION
    )
    assert code == 0
    assert "conv-1: revision 4" in out and "conv-2" not in out
    assert "1 of 2 installed tools visible" in out
    start = next(line for line in out.splitlines() if "pomodoro.start" in line)
    stop = next(line for line in out.splitlines() if "pomodoro.stop" in line)
    assert "yes" in start and "visible" in start
    assert " no " in stop and "may not be launched" in stop

    code, out, _ = _tools(capsys, "inventory", "--data-dir", str(data_dir), "--conversation", "x")
    assert (code, out.strip()) == (0, "no inventory has been published for 'x'")


def test_the_tools_commands_read_while_the_runtime_writes(
    tool_db: tuple[Path, sqlite3.Connection], capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, db = tool_db
    _insert(db, "tool_calls", _call_row("call_later", "accepted", NOW_MS))  # a live write
    code, out, _ = _tools(capsys, "calls", "--data-dir", str(data_dir), "--json")
    assert code == 0
    assert json.loads(out)[0]["call_id"] == "call_later"
    db.close()  # the runtime stops
    before = (data_dir / "tool_router.db").read_bytes()
    code, out, _ = _tools(
        capsys, "calls", "--data-dir", str(data_dir), "--state", "accepted", "--json"
    )
    assert [row["call_id"] for row in json.loads(out)] == ["call_later"]
    assert _tools(capsys, "inventory", "--data-dir", str(data_dir))[0] == 0
    assert (data_dir / "tool_router.db").read_bytes() == before  # read, never written


@pytest.mark.parametrize("command", ["calls", "inventory"])
def test_a_missing_data_dir_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, out, err = _tools(capsys, command, "--data-dir", str(tmp_path / "nowhere"))
    assert code == 2
    assert out == ""
    message = " ".join(err.split())
    assert message.startswith("error: no runtime data in ")
    assert "pass --data-dir" in message and "Traceback" not in message
    assert message.count(". ") == 0


def test_every_tools_command_and_option_has_help() -> None:
    parser = argparse.ArgumentParser(prog="lineup")
    register_tools(parser.add_subparsers())
    parsers = [parser]
    checked = 0
    while parsers:
        current = parsers.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
                for choice in action._choices_actions:
                    assert choice.help, f"{current.prog} {choice.dest}"
            elif not isinstance(action, argparse._HelpAction):
                assert action.help, f"{current.prog} {action.option_strings}"
                checked += 1
    assert checked >= 8


# --- the agent client -----------------------------------------------------------------------


async def test_the_agent_holds_each_conversations_highest_revision_and_the_global_one_beside(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    async with runtime_link(server, receive=False) as runtime:
        for message in (
            inventory(3, [START]),
            inventory(5, [START, BOARD]),
            inventory(4, []),  # late and older: not taken
            inventory(2, [BOARD], conversation="runtime:global"),
            inventory(6, [], conversation="runtime:global"),  # not the conversation's
        ):
            assert (await runtime.submit(message)).status == "accepted"
    async with agent_of(server, inbox=False) as agent:
        held = agent.inventory(CONVERSATION)
        assert held is not None
        assert held.revision == "5"
        assert [(t.app_scope, t.method) for t in held.tools] == [
            ("pomodoro", "pomodoro.start"),
            ("whiteboard", "board.create"),
        ]
        other = agent.inventory("conv-9")  # only the global one applies there
        assert other is not None and other.revision == "6"
        assert agent.cursor == 5  # nothing waits in an inbox it does not keep
        with pytest.raises(AgentError, match="no inbox"):
            await agent.receive()


async def test_a_call_yields_its_receipts_and_one_final(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    async with runtime_link(server) as runtime:
        await runtime.submit(inventory(5, [START, BOARD]))
        async with agent_of(server) as agent:
            call = agent.call(CONVERSATION, "pomodoro.start", {"minutes": 25})
            events: list[AgentMessage] = []

            async def follow() -> None:
                async for event in call:
                    events.append(event)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(follow)
                (invoke,) = await invokes(runtime, 1)
                await answer(
                    runtime,
                    invoke,
                    ("lineup.tool.accepted", {}),
                    ("lineup.tool.starting", {}),
                    ("lineup.tool.activation_ready", {}),
                    ("lineup.tool.progress", {"stage": "started", "percent": 0}),
                    ("lineup.tool.result", {"output": {"state": "running"}}),
                    ("lineup.tool.result", {"output": {"state": "again"}}),  # a second final
                )
                await runtime.submit(user_text("after the call"))
            # The second final reaches neither the call nor the inbox.
            with trio.fail_after(TIMEOUT):
                seen = [(await agent.receive()) for _ in range(2)]
            assert [m.type for m in seen] == ["lineup.inventory", "lineup.message"]
    assert kinds(events) == ["accepted", "starting", "activation_ready", "progress", "result"]
    assert call.final is events[-1] and call.ok
    assert call.final.payload().output == {"state": "running"}
    assert {event.call_id for event in events} == {call.call_id}
    assert call.sent is not None and call.sent.call_id == call.call_id
    checked = validate_message(invoke)
    assert checked.type == "lineup.tool.invoke"
    assert (checked.sender.kind, checked.sender.id) == ("agent", "demo")
    assert (checked.target.kind, checked.target.app_scope) == ("runtime", "pomodoro")
    assert (checked.scope.app_scope, checked.scope.conversation_id) == ("pomodoro", CONVERSATION)
    assert checked.correlation is not None
    assert (checked.correlation.call_id, checked.correlation.inventory_revision) == (
        call.call_id,
        "5",
    )
    assert checked.payload == {
        "method": "pomodoro.start",
        "contract_version": "1",
        "arguments": {"minutes": 25},
    }


async def test_many_calls_are_in_flight_at_once(start_appserver: StartAppServer) -> None:
    count = 60
    server = await start_appserver()
    async with runtime_link(server) as runtime:
        await runtime.submit(inventory(5, [START]))
        async with agent_of(server, inbox=False) as agent:
            outputs: dict[int, dict[str, Any]] = {}

            async def one(minutes: int) -> None:
                call = agent.call(CONVERSATION, "pomodoro.start", {"minutes": minutes})
                final = await call.outcome()
                outputs[minutes] = final.payload().output

            async with trio.open_nursery() as nursery:
                for minutes in range(1, count + 1):
                    nursery.start_soon(one, minutes)
                calls = await invokes(runtime, count)
                for call in calls:  # every call accepted before any ends
                    await answer(runtime, call, ("lineup.tool.accepted", {}))
                for call in reversed(calls):  # and they end in the reverse order
                    minutes = call["payload"]["arguments"]["minutes"]
                    await answer(
                        runtime, call, ("lineup.tool.result", {"output": {"minutes": minutes}})
                    )
    assert outputs == {m: {"minutes": m} for m in range(1, count + 1)}


async def test_an_error_ends_a_call_and_a_cancel_names_it(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    async with runtime_link(server) as runtime:
        await runtime.submit(inventory(5, [START]))
        async with agent_of(server, inbox=False) as agent:
            call = agent.call(CONVERSATION, "pomodoro.start", {"minutes": 5}, call_id="call_x1")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call.outcome)
                (invoke,) = await invokes(runtime, 1)
                await answer(runtime, invoke, ("lineup.tool.accepted", {}))
                sent = await agent.cancel(CONVERSATION, "call_x1", "pomodoro", reason="changed")
                got = await collect(runtime, 1, keep=lambda m: m["type"] == "lineup.tool.cancel")
                await answer(runtime, invoke, ("lineup.tool.error", {"code": "cancelled_by_user"}))
    assert call.final is not None and not call.ok
    assert call.final.payload().code == "cancelled_by_user"
    cancel = validate_message(got[0].message)
    assert cancel.id == sent.message_id
    assert (cancel.target.kind, cancel.target.app_scope) == ("runtime", "pomodoro")
    assert cancel.correlation is not None and cancel.correlation.call_id == "call_x1"
    assert cancel.payload == {"reason": "changed"}


async def test_a_call_that_cannot_be_built_is_an_agent_error(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    async with runtime_link(server) as runtime:
        await runtime.submit(user_text("hello"))
        async with agent_of(server, inbox=False) as agent:
            with pytest.raises(AgentError, match="no inventory has been received for 'conv-1'"):
                agent.call(CONVERSATION, "pomodoro.start", {"minutes": 5})
            # Called anyway, for the runtime to refuse: with the app and a revision.
            anyway = agent.call(
                CONVERSATION, "pomodoro.start", {}, app_scope="pomodoro", revision=7
            )
            assert (anyway.app_scope, anyway.revision, anyway.contract_version) == (
                "pomodoro",
                "7",
                "1",
            )
        twice = {**BOARD, "app_scope": "pomodoro", "method": "board.create"}
        await runtime.submit(inventory(6, [START, BOARD, twice]))
        async with agent_of(server, inbox=False) as agent:
            with pytest.raises(AgentError, match=r"'pomodoro\.stop'.* not in the inventory"):
                agent.call(CONVERSATION, "pomodoro.stop", {})
            with pytest.raises(AgentError, match=r"several apps \(pomodoro, whiteboard\)"):
                agent.call(CONVERSATION, "board.create", {})
            board = agent.call(CONVERSATION, "board.create", {}, app_scope="whiteboard")
            assert (board.app_scope, board.contract_version, board.revision) == (
                "whiteboard",
                "2",
                "6",
            )


async def test_a_call_made_after_its_outcome_arrived_gets_that_outcome(
    start_appserver: StartAppServer,
) -> None:
    """The agent restarted between its call and the answer: it re-makes the same call (the
    same ids) after the backlog brought the outcome, and gets that outcome."""
    server = await start_appserver()
    async with runtime_link(server) as runtime:
        await runtime.submit(inventory(5, [START]))
        async with agent_of(server) as first:
            call = first.call(CONVERSATION, "pomodoro.start", {"minutes": 5}, call_id="call_r1")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call.__anext__)  # submits, then the agent "crashes"
                (invoke,) = await invokes(runtime, 1)
                nursery.cancel_scope.cancel()
        await answer(
            runtime,
            invoke,
            ("lineup.tool.accepted", {}),
            ("lineup.tool.result", {"output": {"state": "running"}}),
        )
        async with agent_of(server) as again:
            redo = again.call(
                CONVERSATION,
                "pomodoro.start",
                {"minutes": 5},
                call_id="call_r1",
                message_id=invoke["id"],
            )
            with trio.fail_after(TIMEOUT):
                events = [event async for event in redo]
    assert kinds(events) == ["accepted", "result"]
    assert redo.sent is not None and redo.sent.duplicate  # the AppServer kept the first


async def test_the_end_of_the_connection_ends_the_calls_in_flight(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    agent = AgentClient(server.url, agent_id="demo", token=server.credentials.agent_token)
    errors: list[AgentError] = []
    async with runtime_link(server) as runtime:
        await runtime.submit(inventory(5, [START]))
        call = agent.call  # bound before the client runs: building needs no connection
        async with trio.open_nursery() as outer, trio.open_nursery() as running:
            await running.start(agent.run)
            with trio.fail_after(TIMEOUT):
                await agent.wait_caught_up()
            pending = call(CONVERSATION, "pomodoro.start", {"minutes": 5})

            async def follow() -> None:
                with pytest.raises(AgentError) as ended:
                    await pending.outcome()
                errors.append(ended.value)

            outer.start_soon(follow)
            await invokes(runtime, 1)  # the call is out, no answer yet
            running.cancel_scope.cancel()
    assert [str(error) for error in errors] == [
        f"the connection has ended before call {pending.call_id} ended"
    ]
    late = agent.call(CONVERSATION, "pomodoro.start", {"minutes": 5})
    with pytest.raises(AgentError, match="the connection has ended before the call was made"):
        await late.outcome()


# --- `lineup agent inventory|call` ----------------------------------------------------------


async def _agent_cli(server: AppServer, *argv: str) -> int:
    """`lineup agent ARGV` as the AppServer's agent, in a worker thread (it runs trio)."""
    options = ["--appserver", server.url, "--appserver-dir", str(server.data_dir)]
    return await trio.to_thread.run_sync(agent_main, [*argv, *options])


async def test_lineup_agent_inventory_prints_what_the_agent_holds(
    start_appserver: StartAppServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await start_appserver()
    async with runtime_link(server, receive=False) as runtime:
        await runtime.submit(inventory(3, [BOARD]))
        await runtime.submit(inventory(4, [START, BOARD]))
    with trio.fail_after(TIMEOUT * 3):
        code = await _agent_cli(server, "inventory", "--conversation", CONVERSATION, "--json")
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    held = json.loads(out)
    assert held["revision"] == "4"
    assert [(t["app_scope"], t["method"], t["contract_version"]) for t in held["tools"]] == [
        ("pomodoro", "pomodoro.start", "1"),
        ("whiteboard", "board.create", "2"),
    ]
    assert held["tools"][0]["input_schema"] == START["input_schema"]
    assert held["tools"][0]["output_schema"] == START["output_schema"]

    with trio.fail_after(TIMEOUT * 3):
        code = await _agent_cli(server, "inventory", "--conversation", CONVERSATION)
    out, _ = capsys.readouterr()
    assert code == 0
    assert "revision 4" in out and "pomodoro.start" in out and "board.create" in out
    assert '"minimum":1' in out  # the schemas, compact

    with trio.fail_after(TIMEOUT * 3):
        code = await _agent_cli(server, "inventory", "--conversation", "conv-none")
    out, err = capsys.readouterr()
    assert code == 1
    assert "holds no inventory for 'conv-none' yet" in " ".join(err.split())


async def test_lineup_agent_call_prints_each_event_and_the_outcome(
    start_appserver: StartAppServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await start_appserver()
    codes: list[int] = []
    async with runtime_link(server) as runtime:
        await runtime.submit(inventory(4, [START]))

        async def call(*extra: str) -> None:
            argv = ["call", "--conversation", CONVERSATION, "--tool", "pomodoro.start"]
            codes.append(await _agent_cli(server, *argv, "--args", '{"minutes": 10}', *extra))

        with trio.fail_after(TIMEOUT * 3):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "--json")
                (invoke,) = await invokes(runtime, 1)
                await answer(
                    runtime,
                    invoke,
                    ("lineup.tool.accepted", {}),
                    ("lineup.tool.progress", {"stage": "started", "percent": 0}),
                    ("lineup.tool.result", {"output": {"state": "running"}}),
                )
        out, err = capsys.readouterr()
        assert (codes, err) == ([0], "")
        summary = json.loads(out)
        assert summary["outcome"] == "result"
        assert summary["output"] == {"state": "running"}
        assert (summary["app_scope"], summary["method"], summary["revision"]) == (
            "pomodoro",
            "pomodoro.start",
            "4",
        )
        assert summary["call_id"] == invoke["correlation"]["call_id"]
        assert summary["arguments"] == {"minutes": 10}
        assert [e["event"] for e in summary["events"]] == ["accepted", "progress", "result"]
        assert summary["events"][1]["payload"] == {"stage": "started", "percent": 0}

        with trio.fail_after(TIMEOUT * 3):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                (invoke,) = await invokes(runtime, 1)
                await answer(
                    runtime,
                    invoke,
                    ("lineup.tool.accepted", {}),
                    ("lineup.tool.error", {"code": "app_disabled", "message": "disabled"}),
                )
        out, err = capsys.readouterr()
        assert codes[1:] == [1]
        lines = out.splitlines()
        assert lines[0].startswith(f"call {invoke['correlation']['call_id']}: pomodoro")
        assert [line.split()[0] for line in lines[1:]] == ["accepted", "error"]
        assert lines[-1].split() == ["error", "app_disabled:", "disabled"]

        with trio.fail_after(TIMEOUT * 3):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "--json")
                (invoke,) = await invokes(runtime, 1)
                await answer(runtime, invoke, ("lineup.tool.error", {"code": "tool_not_visible"}))
        out, _ = capsys.readouterr()
        assert codes[2:] == [1]
        refused = json.loads(out)
        assert (refused["outcome"], refused["code"]) == ("error", "tool_not_visible")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--args", "{minutes: 5}"], "--args is not valid JSON: write the arguments as a JSON"),
        (["--args", "[5]"], "--args must be a JSON object"),
        (["--app", "Not A Scope"], "--app: 'Not A Scope' is not an app scope"),
        (
            ["--tool", "pomodoro.stop"],
            "cannot call 'pomodoro.stop' in 'conv-1': it is not in the inventory (revision 4); "
            "see `lineup agent inventory --conversation conv-1`, or pass --app",
        ),
        (
            ["--conversation", "conv-2"],
            "cannot call 'pomodoro.start' in 'conv-2': the agent holds no inventory for it;",
        ),
        (
            ["--conversation", "conv-2", "--app", "pomodoro"],
            "the agent holds no inventory for it, so pass --revision as well",
        ),
    ],
)
async def test_lineup_agent_call_refuses_bad_input_in_one_sentence(
    start_appserver: StartAppServer,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    server = await start_appserver()
    async with runtime_link(server, receive=False) as runtime:
        await runtime.submit(inventory(4, [START]))
    argv = ["call", "--conversation", CONVERSATION, "--tool", "pomodoro.start", *extra]
    with trio.fail_after(TIMEOUT * 3):
        code = await _agent_cli(server, *argv)
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert message in " ".join(err.split()), err
    assert "Traceback" not in err and "Error" not in err


# --- the demo agent's "focus N" -------------------------------------------------------------

# The recording a spoken message hands the agent (the chat's artifact).
RECORDING = {
    "artifact_id": "art_01KZB899ZQ3D8N6K4W2T1S0R9P",
    "title": "Recording of 5 s",
    "media_type": "audio/webm",
    "size": 6211,
}


@contextlib.asynccontextmanager
async def demo_agent(server: AppServer) -> AsyncIterator[None]:
    async with trio.open_nursery() as nursery:
        await nursery.start(
            partial(
                run_demo_agent,
                server.url,
                agent_id="demo",
                token=server.credentials.agent_token,
                backoff_initial=0.01,
            )
        )
        yield
        nursery.cancel_scope.cancel()


async def _says(runtime: Link, trigger: dict[str, Any]) -> str:
    (said,) = await collect(
        runtime,
        1,
        keep=lambda m: m["type"] == "lineup.message" and m["sender"]["kind"] == "agent",
    )
    assert said.message["correlation"]["reply_to"] == trigger["id"]
    return str(said.message["payload"]["text"])


async def test_the_demo_agent_starts_a_focus_timer_through_its_inventory(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    async with runtime_link(server) as runtime, demo_agent(server):
        await runtime.submit(inventory(4, [START]))
        focus = user_text("focus 10")
        await runtime.submit(focus)
        (invoke,) = await invokes(runtime, 1)
        assert invoke["payload"]["arguments"] == {"minutes": 10}
        correlation = invoke["correlation"]
        assert (correlation["call_id"], correlation["inventory_revision"]) == (
            f"call_{derive_message_id(focus['id'], 1)}",
            "4",
        )
        await answer(
            runtime,
            invoke,
            ("lineup.tool.accepted", {}),
            ("lineup.tool.result", {"output": {"state": "running", "ends_at": "10:10Z"}}),
        )
        assert await _says(runtime, focus) == (
            "Your 10-minute focus timer has started, until 10:10Z."
        )

        again = user_text("Focus")  # 25 minutes by default
        await runtime.submit(again)
        (invoke,) = await invokes(runtime, 1)
        assert invoke["payload"]["arguments"] == {"minutes": 25}
        await answer(runtime, invoke, ("lineup.tool.error", {"code": "app_disabled"}))
        assert await _says(runtime, again) == (
            "I could not start a 25-minute focus timer: the Pomodoro app is disabled "
            "(`app_disabled`)."
        )

        # Spoken (voice mode: the message hands over its recording), as the host wrote it
        # out: numbers in words, the request said again and cut short at the end.
        spoken = user_text("'cause twenty five focus twenty")
        spoken["payload"].update(mode="audio", audio=RECORDING)
        await runtime.submit(spoken)
        (invoke,) = await invokes(runtime, 1)
        assert invoke["payload"]["arguments"] == {"minutes": 25}


async def test_the_demo_agent_says_when_pomodoro_is_not_available(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    async with runtime_link(server) as runtime, demo_agent(server):
        await runtime.submit(inventory(4, [BOARD]))
        focus = user_text("focus 5")
        await runtime.submit(focus)
        assert await _says(runtime, focus) == (
            "Pomodoro is not available in this conversation, so I cannot start a timer."
        )
