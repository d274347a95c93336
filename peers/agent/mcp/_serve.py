"""Running the bridge: the agent client, the ledger and the MCP server, over stdio or over
Streamable HTTP on 127.0.0.1 behind a bearer key.

One bridge at a time uses a state dir (an flock on `bridge.lock` there): two would move one
cursor and write one ledger.

**The HTTP key.** 32 random bytes (URL-safe base64), made on the first `--http` start and
kept in `http.key` (0600) in the state dir, so a configured client keeps working across
restarts; delete the file for a new one. A request without `Authorization: Bearer KEY` is
answered 401 before anything of MCP reads it. The server also checks `Host` and `Origin`
(the MCP SDK's DNS-rebinding guard, for 127.0.0.1 and localhost only).
"""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve
from mcp.server.stdio import stdio_server

from contracts import replace_file

from .. import AgentClient
from ._bridge import Bridge
from ._ledger import Ledger

LOCK_FILE: Final = "bridge.lock"
KEY_FILE: Final = "http.key"
HTTP_PATH: Final = "/mcp"
LOOPBACK: Final = "127.0.0.1"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class BridgeBusy(Exception):
    """Another bridge uses the state dir."""


@dataclass(frozen=True, slots=True)
class BridgeSettings:
    url: str
    agent_id: str
    token: str
    conversation_id: str
    state_dir: Path
    version: str


@contextlib.contextmanager
def _locked(state_dir: Path) -> Iterator[IO[str]]:
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with (state_dir / LOCK_FILE).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BridgeBusy(
                f"another `lineup agent mcp` is using {state_dir}; stop it, or give this one "
                "another --state-dir"
            ) from None
        yield handle


@contextlib.asynccontextmanager
async def running(settings: BridgeSettings) -> AsyncIterator[Bridge]:
    """The bridge, its agent connected and its inbox read, for the block."""
    with _locked(settings.state_dir):
        ledger = Ledger(settings.state_dir)
        client = AgentClient(
            settings.url,
            agent_id=settings.agent_id,
            token=settings.token,
            state_dir=settings.state_dir,
        )
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(client.run)
                bridge = Bridge(
                    client,
                    ledger,
                    settings.conversation_id,
                    nursery,
                    version=settings.version,
                )
                nursery.start_soon(bridge.read_inbox)
                yield bridge
                nursery.cancel_scope.cancel()
        finally:
            ledger.close()


async def serve_stdio(settings: BridgeSettings) -> None:
    """Serves MCP on this process's stdin and stdout until stdin ends."""
    async with running(settings) as bridge, stdio_server() as (read, write):
        await bridge.server.run(read, write, bridge.initialization_options())


def http_key(state_dir: Path) -> str:
    """The bridge's HTTP key, made (0600) when there is none, or an empty one (what a power
    cut leaves of a key written but never synced): never the empty key."""
    path = state_dir / KEY_FILE
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        key = path.read_text(encoding="ascii").strip()
        if key:
            return key
    replace_file(path, secrets.token_urlsafe(32) + "\n")
    return path.read_text(encoding="ascii").strip()


class BearerGuard:
    """Admits an HTTP request only with the bridge's key (`Authorization: Bearer KEY`,
    compared in constant time); the lifespan passes through."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], key: str) -> None:
        self._app = app
        self._expected = f"Bearer {key}".encode()

    def _admits(self, scope: Scope) -> bool:
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        return hmac.compare_digest(given, self._expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self._admits(scope):
            await self._app(scope, receive, send)
            return
        if scope["type"] != "http":  # a WebSocket: MCP has none, and no key either
            await send({"type": "websocket.close", "code": 1008})
            return
        body = {
            "error": "unauthorized",
            "error_description": f"send the bridge's key (its {KEY_FILE} file) as "
            "Authorization: Bearer KEY",
        }
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="lineup"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(body).encode()})


async def serve_http(
    settings: BridgeSettings,
    port: int,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serves MCP (Streamable HTTP) on 127.0.0.1:`port` (0: a free one) at `/mcp` until
    cancelled; started with the port it listens on."""
    key = http_key(settings.state_dir)
    async with running(settings) as bridge, trio.open_nursery() as nursery:
        app = bridge.server.streamable_http_app(streamable_http_path=HTTP_PATH, host=LOOPBACK)
        config = Config()
        config.bind = [f"{LOOPBACK}:{port}"]
        config.include_server_header = False
        config.accesslog = None
        guarded = BearerGuard(app, key)
        binds: list[str] = await nursery.start(
            lambda task_status: hypercorn_serve(guarded, config, task_status=task_status)  # type: ignore[arg-type]
        )
        task_status.started(int(binds[0].rsplit(":", 1)[1]))
