"""§3.2: ping after an idle interval, close 4408 after three silent ones — on a fast clock.

The clock runs 5 times faster than real time, so a 1 s heartbeat interval takes 200 ms;
the sockets are real, only the timeouts are compressed (not so much that a busy machine's
scheduling delays would look like a silent peer).
"""

from __future__ import annotations

import contextlib
import json

import pytest
import trio
import trio_websocket
from trio.testing import MockClock

from contracts import Ping, Welcome, encode_frame, utc_timestamp
from link import Link

from .conftest import StartAppServer
from .helpers import collect, raw_client, runtime_link, user_text


@pytest.fixture
def fast_clock() -> MockClock:
    return MockClock(rate=5)


async def test_the_server_pings_an_idle_client(
    fast_clock: MockClock, start_appserver: StartAppServer
) -> None:
    server = await start_appserver(heartbeat_interval_ms=1000)
    async with raw_client(server.url) as client:
        await client.hello(server.credentials.runtime_token)
        ping = await client.receive()
        assert isinstance(ping, Ping)
        await client.send({"frame": "pong", "nonce": ping.nonce})
        assert (await client.receive()).frame == "ping"


async def test_a_client_silent_for_three_intervals_is_closed_4408(
    fast_clock: MockClock, start_appserver: StartAppServer
) -> None:
    server = await start_appserver(heartbeat_interval_ms=1000)
    async with raw_client(server.url) as client:
        await client.hello(server.credentials.runtime_token)
        started = trio.current_time()
        assert await client.close_code() == 4408  # the pings went unanswered
        assert trio.current_time() - started >= 2.9
    assert server.statistics().heartbeat_timeouts == 1


async def test_a_connection_that_never_says_hello_is_closed_4408(
    fast_clock: MockClock, start_appserver: StartAppServer
) -> None:
    server = await start_appserver(heartbeat_interval_ms=1000)
    async with raw_client(server.url) as client:
        assert await client.close_code() == 4408
    assert client.frames == []  # no error frame for a timeout


async def test_a_client_that_answers_pings_stays_connected(
    fast_clock: MockClock, start_appserver: StartAppServer
) -> None:
    server = await start_appserver(heartbeat_interval_ms=1000)
    async with raw_client(server.url) as client:
        await client.hello(server.credentials.runtime_token)
        started = trio.current_time()
        for _ in range(6):  # twice the timeout, answering each ping
            ping = await client.receive()
            assert isinstance(ping, Ping)
            await client.send({"frame": "pong", "nonce": ping.nonce})
        assert trio.current_time() - started >= 5.9
        stats = server.statistics()
        assert (stats.sessions, stats.heartbeat_timeouts, stats.pings_sent) == (1, 0, 6)


async def test_an_idle_link_keeps_its_connection_alive(
    fast_clock: MockClock, start_appserver: StartAppServer
) -> None:
    server = await start_appserver(heartbeat_interval_ms=1000)
    async with runtime_link(server) as link:
        await link.wait_state("live")
        await trio.sleep(6)  # the subject of the test: six idle intervals pass
        assert (link.statistics().connects, link.state) == (1, "live")
        # The server's pings, answered, kept it busy: it sent none of its own.
        assert server.statistics().pings_sent >= 5 and link.statistics().pings_sent == 0
        async with runtime_link(server, peer_id="writer", receive=False) as writer:
            await writer.submit(user_text("still there?"))
        assert [r.seq for r in await collect(link, 1)] == [1]
    assert server.statistics().heartbeat_timeouts == 0


async def test_the_link_reconnects_when_the_server_falls_silent(
    fast_clock: MockClock, nursery: trio.Nursery
) -> None:
    hellos_in, hellos = trio.open_memory_channel[str](10)

    async def silent(request: trio_websocket.WebSocketRequest) -> None:
        ws = await request.accept()
        await hellos_in.send(str(await ws.get_message()))
        welcome = Welcome(
            frame="welcome",
            protocol_version=1,
            session_id="s_silent",
            server_time=utc_timestamp(),
            heartbeat_interval_ms=1000,
            max_frame_bytes=1 << 20,
            max_batch_items=256,
            max_unacked=16,
        )
        await ws.send_message(encode_frame(welcome).decode())
        with contextlib.suppress(trio_websocket.ConnectionClosed):
            while True:  # reads, never answers
                json.loads(await ws.get_message())

    server = await nursery.start(trio_websocket.serve_websocket, silent, "127.0.0.1", 0, None)
    link = Link(
        f"ws://127.0.0.1:{server.port}/",
        role="runtime",
        peer_id="laptop",
        token="t",
        backoff_initial=0.01,
    )
    nursery.start_soon(link.run)
    with trio.fail_after(30):
        await hellos.receive()
        started = trio.current_time()
        await hellos.receive()  # the link gave up on the silent connection and came back
    assert trio.current_time() - started >= 3
    assert "three heartbeat intervals" in (link.statistics().last_error or "")
