"""§4.1-4.4: the numbered stream, sync in batches, backlog_end, live delivery and acks."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from contracts import (
    MAX_FRAME_BYTES,
    BacklogEnd,
    Batch,
    Deliver,
    ErrorFrame,
    encode_frame,
    validate_message,
)
from link import Link
from peers.appserver import AppServer

from .conftest import StartAppServer
from .helpers import (
    TIMEOUT,
    RawClient,
    agent_text,
    collect,
    envelope,
    inventory,
    raw_client,
    runtime_link,
    text_of,
    user_text,
)


async def _submit_all(server: AppServer, messages: list[dict[str, Any]]) -> list[int]:
    async with raw_client(server.url) as client:
        await client.hello(server.credentials.runtime_token, peer_id="writer")
        seqs = []
        for message in messages:
            result = await client.submit(message)
            assert result.status == "accepted", result
            seqs.append(result.seq)
    return seqs


async def _runtime(client: RawClient, server: AppServer) -> None:
    await client.hello(server.credentials.runtime_token)


async def test_sync_pages_from_the_cursor_then_backlog_end_then_live_with_no_gap(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    assert await _submit_all(server, [user_text(f"m{i}") for i in range(1, 8)]) == list(range(1, 8))
    async with raw_client(server.url) as client:
        await _runtime(client, server)
        await client.send({"frame": "sync", "cursor": 2, "limit": 3})
        first = await client.receive_kind("batch")
        assert isinstance(first, Batch)
        assert [item.seq for item in first.items] == [3, 4, 5]
        # Accepted while the client pages: the backlog simply grows.
        await _submit_all(server, [user_text("m8"), user_text("m9")])
        await client.send({"frame": "sync", "cursor": 5, "limit": 3})
        second = await client.receive_kind("batch")
        assert [item.seq for item in second.items] == [6, 7, 8]
        await client.send({"frame": "sync", "cursor": 8, "limit": 3})
        third = await client.receive_kind("batch")
        assert [item.seq for item in third.items] == [9]
        end = await client.receive_kind("backlog_end")
        assert isinstance(end, BacklogEnd) and end.cursor == 9
        await _submit_all(server, [user_text("m10")])
        live = await client.receive_kind("deliver")
        assert isinstance(live, Deliver) and live.seq == 10
        assert text_of(live.message) == "m10"


async def test_an_empty_batch_at_the_end_is_followed_by_backlog_end_at_the_cursor(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    async with raw_client(server.url) as client:
        await _runtime(client, server)
        await client.send({"frame": "sync", "cursor": 0})
        batch = await client.receive_kind("batch")
        assert isinstance(batch, Batch) and batch.items == []
        end = await client.receive_kind("backlog_end")
        assert isinstance(end, BacklogEnd) and end.cursor == 0


async def test_forwarded_messages_carry_the_servers_number(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    canonical = user_text("numbered")
    canonical["correlation"] = {"sequence": 41}  # a submitter's number is overwritten
    legacy = {
        "type": "lineup.v1.message",
        "id": canonical["id"][:-1] + ("0" if canonical["id"][-1] != "0" else "1"),
        "ts": "2026-08-06T10:00:26.962Z",
        "from": {"role": "user", "id": "alice"},
        "payload": {"text": "legacy", "format": "plain"},
    }
    await _submit_all(server, [canonical, legacy])  # legacy: the session's conversation
    async with runtime_link(server) as link:
        got = await collect(link, 2)
    assert got[0].message["correlation"] == {"sequence": 1}
    assert got[1].message["seq"] == 2
    assert got[1].message["conversation_id"] == "conv-1"
    assert got[1].message["type"] == "lineup.v1.message"  # forwarded as it was submitted
    assert validate_message(got[1].message).correlation.sequence == 2  # type: ignore[union-attr]


async def test_live_delivery_keeps_at_most_max_unacked_in_flight(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver(max_unacked=3)
    async with raw_client(server.url) as client:
        await _runtime(client, server)
        await client.send({"frame": "sync", "cursor": 0})
        await client.receive_kind("batch")
        await client.receive_kind("backlog_end")
        await _submit_all(server, [user_text(f"live {i}") for i in range(1, 7)])
        first = [await client.receive_kind("deliver") for _ in range(3)]
        assert [frame.seq for frame in first] == [1, 2, 3]  # type: ignore[union-attr]
        # Everything the server would do has been done: no fourth delivery without an ack.
        await trio.testing.wait_all_tasks_blocked(0.05)
        await client.send({"frame": "ping", "nonce": 1})
        assert (await client.receive()).frame == "pong"
        await client.send({"frame": "ack", "cursor": 2})
        assert [(await client.receive_kind("deliver")).seq for _ in range(2)] == [4, 5]  # type: ignore[union-attr]
        await client.send({"frame": "ack", "cursor": 1})  # lower than before: changes nothing
        await client.send({"frame": "ack", "cursor": 5})
        assert (await client.receive_kind("deliver")).seq == 6  # type: ignore[union-attr]


async def test_batches_stay_under_max_frame_bytes(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    big = "é" * 100_000  # 200 kB in UTF-8; 12 of them: more than two frames' worth

    def action(index: int) -> dict[str, Any]:
        return envelope(
            "lineup.ui.action",
            {"action": "note.add", "input": {"index": index, "blob": big}},
            target=("app", "chat"),
        )

    await _submit_all(server, [action(i) for i in range(12)])
    async with raw_client(server.url) as client:
        await _runtime(client, server)
        await client.send({"frame": "sync", "cursor": 0})
        batch = await client.receive_kind("batch")
        assert isinstance(batch, Batch)
        assert 0 < len(batch.items) < 12  # cut short by size, not at the end: no backlog_end
        assert len(encode_frame(batch)) <= MAX_FRAME_BYTES
    async with runtime_link(server) as link:  # a client that pages on reads them all
        got = await collect(link, 12)
    assert [r.message["payload"]["input"]["index"] for r in got] == list(range(12))


async def test_an_agent_sees_only_its_conversations_and_global_events(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver(agents=["demo", "other"])
    tokens = server.credentials.agent_tokens
    async with raw_client(server.url) as other:
        await other.hello(tokens["other"], role="agent", peer_id="other")
        opened = await other.submit(agent_text("mine", conversation="conv-b", agent="other"))
        assert opened.status == "accepted"
    global_inventory = inventory("3", conversation="runtime:global")
    await _submit_all(
        server,
        [
            user_text("to demo", conversation="conv-a"),
            global_inventory,
            user_text("b", conversation="conv-b"),
        ],
    )
    seen: dict[str, list[str]] = {}
    for agent in ("demo", "other"):
        link = Link(server.url, role="agent", peer_id=agent, token=tokens[agent])
        async with trio.open_nursery() as nursery:
            await nursery.start(link.run)
            with trio.fail_after(TIMEOUT):
                await link.wait_state("live")
            seen[agent] = []
            while True:
                try:
                    received = link.messages.receive_nowait()
                except trio.WouldBlock:
                    break
                seen[agent].append(received.message["scope"]["conversation_id"])
            nursery.cancel_scope.cancel()
    assert seen == {
        "demo": ["conv-a", "runtime:global"],
        "other": ["conv-b", "runtime:global", "conv-b"],
    }


async def test_the_runtime_sees_the_whole_account_including_its_own(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    mine = user_text("from the user")
    await _submit_all(server, [mine])
    async with raw_client(server.url) as agent:
        await agent.hello(server.credentials.agent_token, role="agent", peer_id="demo")
        reply = envelope(
            "lineup.message",
            {"text": "from the agent"},
            sender=("agent", "demo"),
            target=("app", "chat"),
        )
        assert (await agent.submit(reply)).status == "accepted"
    async with runtime_link(server) as link:
        got = await collect(link, 2)
    assert [r.message["id"] for r in got] == [mine["id"], reply["id"]]


async def test_a_cursor_ahead_of_the_stream_is_refused(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    await _submit_all(server, [user_text("only one")])
    async with raw_client(server.url) as client:
        await _runtime(client, server)
        await client.send({"frame": "sync", "cursor": 5})
        error = await client.receive_kind("error")
        assert isinstance(error, ErrorFrame)
        assert (error.code, error.fatal) == ("protocol_error", True)
        assert "ahead of this stream (last seq 1)" in error.detail
        assert await client.close_code() == 4400
