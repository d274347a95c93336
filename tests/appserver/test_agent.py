"""The agent client (§5): receive in order and once, send every kind of agent message."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from contracts import ContractError, validate_message
from peers.agent import AgentClient, AgentError, LinkFailed, SubmitRejected, open_agent
from peers.appserver import AppServer

from .conftest import StartAppServer
from .helpers import TIMEOUT, collect, inventory, runtime_link, user_text


def _agent(server: AppServer, **options: object) -> AgentClient:
    return AgentClient(
        server.url,
        agent_id="demo",
        token=server.credentials.agent_token,
        backoff_initial=0.01,
        **options,  # type: ignore[arg-type]
    )


async def test_round_trip_between_a_user_and_the_agent(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    agent = _agent(server)
    async with trio.open_nursery() as nursery, runtime_link(server) as runtime:
        await nursery.start(agent.run)
        question = user_text("What's the plan?")
        await runtime.submit(question)
        with trio.fail_after(TIMEOUT):
            received = await agent.receive()
        assert (received.id, received.type, received.conversation_id) == (
            question["id"],
            "lineup.message",
            "conv-1",
        )
        assert (received.sender.kind, received.sender.id) == ("user", "alice")
        assert received.payload().text == "What's the plan?"

        sent = [
            await agent.send_text("conv-1", "plain", reply_to=received.id),
            await agent.send_markdown("conv-1", "**bold**"),
            await agent.send_task_progress("conv-1", "t-1", "running", percent=40, label="Half"),
            await agent.ask_choice("conv-1", "Pick", {"a": "A", "b": "B"}, interaction_id="q1"),
            await agent.ask_confirm("conv-1", "Sure?", confirm_label="Yes"),
            await agent.ask_input("conv-1", "Name?", placeholder="Sprint 12"),
        ]
        assert [s.seq for s in sent] == list(range(2, 8))
        assert sent[3].interaction_id == "q1"
        assert sent[4].interaction_id == f"ask-{sent[4].message_id}"
        got = await collect(runtime, 6, keep=lambda m: m["sender"]["kind"] == "agent")
        nursery.cancel_scope.cancel()
    envelopes = [validate_message(r.message) for r in got]
    assert [e.id for e in envelopes] == [s.message_id for s in sent]
    assert {(e.sender.kind, e.sender.id) for e in envelopes} == {("agent", "demo")}
    assert [e.type for e in envelopes] == ["lineup.message"] * 2 + ["lineup.task.progress"] + [
        "lineup.interaction.request"
    ] * 3
    assert envelopes[0].payload == {"text": "plain", "format": "plain"}
    assert envelopes[0].correlation is not None
    assert envelopes[0].correlation.reply_to == question["id"]
    assert envelopes[1].payload == {"text": "**bold**", "format": "markdown"}
    assert envelopes[2].payload == {
        "task_id": "t-1",
        "status": "running",
        "percent": 40,
        "label": "Half",
    }
    assert envelopes[3].payload == {
        "interaction_id": "q1",
        "kind": "choice",
        "prompt": "Pick",
        "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
    }
    assert envelopes[4].payload["kind"] == "confirm"  # type: ignore[index]
    assert envelopes[5].payload["placeholder"] == "Sprint 12"  # type: ignore[index]


async def test_the_agent_does_not_receive_its_own_messages_unless_asked(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    async with open_agent(server.url, agent_id="demo", token=server.credentials.agent_token) as a:
        await a.send_text("conv-1", "mine")
        async with runtime_link(server, receive=False) as runtime:
            await runtime.submit(user_text("theirs"))
        with trio.fail_after(TIMEOUT):
            assert (await a.receive()).payload().text == "theirs"
        assert a.cursor == 1  # its own message counts as processed
    async with open_agent(
        server.url, agent_id="demo", token=server.credentials.agent_token, include_own=True
    ) as everything:
        with trio.fail_after(TIMEOUT):
            texts = [(await everything.receive()).payload().text for _ in range(2)]
    assert texts == ["mine", "theirs"]


async def test_the_cursor_is_kept_in_the_state_dir_and_acknowledged(
    start_appserver: StartAppServer, tmp_path: Path
) -> None:
    server = await start_appserver()
    async with runtime_link(server, receive=False) as runtime:
        for i in range(5):
            await runtime.submit(user_text(f"#{i}"))
    state = tmp_path / "state"
    async with open_agent(
        server.url, agent_id="demo", token=server.credentials.agent_token, state_dir=state
    ) as agent:
        with trio.fail_after(TIMEOUT):
            first = await agent.receive()
            second = await agent.receive()
        agent.processed(second)
        assert (first.seq, second.seq, agent.cursor) == (1, 2, 2)
    assert (state / "cursor.json").read_text().strip() == '{"cursor": 2}'
    async with open_agent(
        server.url, agent_id="demo", token=server.credentials.agent_token, state_dir=state
    ) as agent:
        with trio.fail_after(TIMEOUT):
            assert (await agent.receive()).payload().text == "#2"


async def test_tool_calls_use_the_latest_inventory(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    async with (
        open_agent(server.url, agent_id="demo", token=server.credentials.agent_token) as agent,
        runtime_link(server) as runtime,
    ):
        with pytest.raises(AgentError, match="no inventory"):
            await agent.invoke_tool("conv-1", "whiteboard", "board.create", {})
        await runtime.submit(inventory("3", conversation="runtime:global"))
        await runtime.submit(inventory("4"))
        with trio.fail_after(TIMEOUT):
            seen = [(await agent.receive()).type for _ in range(2)]
        assert seen == ["lineup.inventory", "lineup.inventory"]
        assert agent.inventory("conv-1").revision == "4"  # type: ignore[union-attr]
        assert agent.inventory("conv-9").revision == "3"  # type: ignore[union-attr]
        call = await agent.invoke_tool("conv-1", "whiteboard", "board.create", {"title": "S"})
        assert call.call_id == f"call_{call.message_id}"
        (got,) = await collect(runtime, 1, keep=lambda m: m["type"] == "lineup.tool.invoke")
    invoke = validate_message(got.message)
    assert invoke.correlation is not None
    assert (invoke.correlation.call_id, invoke.correlation.inventory_revision) == (
        call.call_id,
        "4",
    )
    assert (invoke.target.kind, invoke.target.app_scope) == ("runtime", "whiteboard")
    assert invoke.payload == {
        "method": "board.create",
        "contract_version": "1",
        "arguments": {"title": "S"},
    }


async def test_mistakes_are_definite_errors(start_appserver: StartAppServer) -> None:
    server = await start_appserver(agents=["demo", "other"])
    async with runtime_link(server, receive=False) as runtime:
        await runtime.submit(user_text("to demo"))
    async with open_agent(
        server.url, agent_id="other", token=server.credentials.agent_tokens["other"]
    ) as other:
        with pytest.raises(SubmitRejected) as rejected:
            await other.send_text("conv-1", "not my conversation")
        assert rejected.value.code == "agent_not_associated"
        with pytest.raises(ContractError) as invalid:  # caught before it is sent
            await other.send_text("conv-1", "")
        assert invalid.value.code == "invalid_payload"
        with pytest.raises(ContractError):
            await other.ask_choice("conv-1", "Pick", {})
        huge = user_text("x")
        huge["payload"]["text"] = "x" * 300_000
        with pytest.raises(ContractError) as too_large:  # never sent: it would end the session
            other.enqueue(huge)
        assert too_large.value.code == "too_large"


async def test_a_refused_token_ends_the_client(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    agent = AgentClient(server.url, agent_id="demo", token="wrong")
    with pytest.raises(LinkFailed) as failed:
        await agent.run()
    assert failed.value.code == "unauthorized"
    with pytest.raises(LinkFailed):
        await agent.wait_live()
    with pytest.raises(LinkFailed):
        await agent.send_text("conv-1", "too late")
    with pytest.raises(LinkFailed):
        await agent.receive()
    with pytest.raises(ValueError, match="agent id"):
        AgentClient(server.url, agent_id="Not Valid", token="t")
    with pytest.raises(ValueError, match="ws://"):
        AgentClient("http://example", agent_id="demo", token="t")
