"""§3.1: hello → welcome, or a fatal error with its close code; the tokens in the data dir."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import trio
import trio_websocket

from contracts import MAX_FRAME_BYTES, ErrorFrame, Welcome
from link import open_websocket
from peers.appserver import (
    AppServer,
    DataDirInUse,
    ensure_credentials,
    read_credentials,
)

from .conftest import StartAppServer, serving
from .helpers import raw_client, user_text


async def test_welcome_announces_version_session_and_limits(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver(heartbeat_interval_ms=2000, max_unacked=7)
    async with raw_client(server.url) as client:
        welcome = await client.hello(server.credentials.runtime_token, versions=[2, 1])
    assert isinstance(welcome, Welcome)
    assert welcome.protocol_version == 1
    assert welcome.heartbeat_interval_ms == 2000
    assert welcome.max_unacked == 7
    assert welcome.max_frame_bytes == MAX_FRAME_BYTES
    assert welcome.max_batch_items == 256


async def test_no_common_version_is_unsupported_version_closed_4406(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    async with raw_client(server.url) as client:
        error = await client.hello(server.credentials.runtime_token, versions=[2, 3])
        assert isinstance(error, ErrorFrame)
        assert (error.code, error.fatal, error.supported_versions) == (
            "unsupported_version",
            True,
            [1],
        )
        assert error.detail == "offered [2, 3]; this server speaks [1]"
        assert await client.close_code() == 4406


@pytest.mark.parametrize(
    ("role", "peer_id", "token_of"),
    [
        ("runtime", "laptop", lambda c: "not-the-token"),
        ("agent", "demo", lambda c: c.runtime_token),  # a runtime token is not an agent's
        ("agent", "other", lambda c: c.agent_token),  # the peer id is not the token's
        ("runtime", "laptop", lambda c: c.agent_token),
    ],
)
async def test_bad_token_is_unauthorized_closed_4401(
    start_appserver: StartAppServer, role: str, peer_id: str, token_of: object
) -> None:
    server = await start_appserver()
    async with raw_client(server.url) as client:
        error = await client.hello(
            token_of(server.credentials),  # type: ignore[operator]
            role=role,
            peer_id=peer_id,
        )
        assert isinstance(error, ErrorFrame)
        assert (error.code, error.fatal) == ("unauthorized", True)
        assert await client.close_code() == 4401
    assert server.statistics().unauthorized == 1


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ({"frame": "sync", "cursor": 0}, "protocol_error"),  # before hello
        ({"frame": "deliver", "seq": 1, "message": {}}, "protocol_error"),  # a server frame
        ({"frame": "hello", "protocol_versions": []}, "invalid_frame"),
        ('{"frame": "hello", "frame": "hello"}', "invalid_json"),
        (b'{"frame": "hello"}', "protocol_error"),  # binary
        ("x" * (MAX_FRAME_BYTES + 1), "too_large"),
    ],
)
async def test_bad_first_frame_is_fatal_closed_4400(
    start_appserver: StartAppServer, frame: object, code: str
) -> None:
    server = await start_appserver()
    async with raw_client(server.url) as client:
        await client.send(frame)  # type: ignore[arg-type]
        error = await client.receive()
        assert isinstance(error, ErrorFrame)
        assert (error.code, error.fatal) == (code, True)
        assert await client.close_code() == 4400


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (
            {
                "frame": "hello",
                "protocol_versions": [1],
                "role": "runtime",
                "peer_id": "x",
                "token": "t",
            },
            "protocol_error",
        ),
        ({"frame": "batch", "items": []}, "protocol_error"),
        ({"frame": "sync", "cursor": -1}, "invalid_frame"),
        ({"frame": "submit", "idempotency_key": "k", "message": {}, "extra": 1}, "invalid_frame"),
        ("[1, 2", "invalid_json"),
    ],
)
async def test_bad_frame_after_welcome_is_fatal_closed_4400(
    start_appserver: StartAppServer, frame: object, code: str
) -> None:
    server = await start_appserver()
    async with raw_client(server.url) as client:
        assert isinstance(await client.hello(server.credentials.runtime_token), Welcome)
        await client.send(frame)  # type: ignore[arg-type]
        error = await client.receive_kind("error")
        assert isinstance(error, ErrorFrame)
        assert (error.code, error.fatal) == (code, True)
        assert await client.close_code() == 4400


async def test_only_the_endpoint_path_is_served(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    with pytest.raises(trio_websocket.ConnectionRejected) as rejected:
        async with open_websocket(server.url.replace("/v1/ws", "/other")):
            pass
    assert rejected.value.status_code == 404


async def test_credentials_are_private_stable_and_readable_by_the_embedder(
    appserver_dir: Path,
) -> None:
    server = AppServer(appserver_dir)
    async with serving(server):
        first = server.credentials
    path = trio.Path(appserver_dir / "credentials.json")
    assert stat.S_IMODE((await path.stat()).st_mode) == 0o600
    assert stat.S_IMODE((await trio.Path(appserver_dir).stat()).st_mode) == 0o700
    assert list(first.agent_tokens) == ["demo"]
    assert first.runtime_token != first.agent_token
    assert read_credentials(appserver_dir) == first
    assert first.runtime_token not in repr(first)
    # A restart, and a new agent, keep the existing tokens.
    async with serving(AppServer(appserver_dir, agents=["demo", "other"])) as again:
        assert again.credentials.runtime_token == first.runtime_token
        assert again.credentials.agent_tokens["demo"] == first.agent_token
        assert again.credentials.agent_id == "demo"
        assert set(again.credentials.agent_tokens) == {"demo", "other"}
    assert json.loads(await path.read_text())["format"] == "lineup.appserver.credentials.v1"


async def test_tokens_can_be_made_before_the_server_starts(appserver_dir: Path) -> None:
    made = ensure_credentials(appserver_dir)
    async with serving(AppServer(appserver_dir)) as server:
        assert server.credentials == made
        async with raw_client(server.url) as client:
            welcome = await client.hello(made.agent_token, role="agent", peer_id="demo")
            assert isinstance(welcome, Welcome)


def test_the_agents_a_server_is_started_with_come_first_and_keep_their_tokens(
    appserver_dir: Path,
) -> None:
    demo = ensure_credentials(appserver_dir, agents=("demo",))
    own = ensure_credentials(appserver_dir, agents=("agent",))
    assert own.agent_id == "agent"  # the default agent of a server started with it
    assert own.token_for_agent("demo") == demo.agent_token
    assert own.runtime_token == demo.runtime_token
    again = ensure_credentials(appserver_dir, agents=("demo",))
    assert again.agent_id == "demo"
    assert list(again.agent_tokens) == ["demo", "agent"]
    assert again.token_for_agent("agent") == own.agent_token
    assert read_credentials(appserver_dir) == again


async def test_one_server_per_data_dir(
    start_appserver: StartAppServer, appserver_dir: Path, nursery: trio.Nursery
) -> None:
    await start_appserver()
    with pytest.raises(DataDirInUse, match="another AppServer"):
        await nursery.start(AppServer(appserver_dir).serve)


async def test_options_are_checked_at_the_door(appserver_dir: Path) -> None:
    for options, message in [
        ({"port": 70000}, "port"),
        ({"agents": ["Not An Agent"]}, "agent id"),
        ({"agents": []}, "at least one agent"),
        ({"heartbeat_interval_ms": 10}, "heartbeat_interval_ms"),
        ({"max_unacked": 0}, "max_unacked"),
        ({"drop_every": 0}, "drop_every"),
        ({"delay_ms": -1.0}, "delay_ms"),
    ]:
        with pytest.raises(ValueError, match=message):
            AppServer(appserver_dir, **options)  # type: ignore[arg-type]
    assert user_text("x")["type"] == "lineup.message"
