"""Agent tools from the agent's end: `AgentClient.call` / `inventory` / `cancel` and the
demo agent's "focus N", against a real AppServer on loopback, the test playing the runtime
with a second link (role runtime) that publishes inventories and answers calls with receipts
and results.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.contracts import derive_message_id, validate_message
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


# --- the agent client -----------------------------------------------------------------------


async def test_the_agent_holds_the_highest_revision_per_conversation(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    async with runtime_link(server, receive=False) as runtime:
        for message in (
            inventory(3, [START]),
            inventory(5, [START, BOARD]),
            inventory(4, []),  # late and older: not taken
            inventory(2, [BOARD], conversation="runtime:global"),
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
        assert other is not None and other.revision == "2"
        assert agent.cursor == 4  # nothing waits in an inbox it does not keep
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


# --- the demo agent's "focus N" -------------------------------------------------------------


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
