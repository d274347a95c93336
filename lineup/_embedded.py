"""`lineup run` without `--appserver`: the reference AppServer and the demo agent on
loopback, in the supervisor's own process and nursery.

Why in-process and not as supervised children: they are not actors (they speak WebSocket,
not kernel frames), they stand for the outside world (a real deployment has neither), and
they must outlive any actor's crash the way a remote server would. They stop with the
runtime. The AppServer keeps its files in `DATA_DIR/appserver` (so `lineup agent send`
finds it with the default options); the runtime's token is kept for the transport, which
alone reads it: in the user's keyring where a Secret Service is on the session bus, else in
`DATA_DIR/.runtime_token` (0600).

They are peers (`peers/appserver`, `peers/agent`), not part of the runtime: a peer knows
the runtime only as a remote party does, through the contracts and the WebSocket. The
embedded AppServer's default agent, which new conversations are associated with and which
`lineup agent …` speaks as without `--agent`, is `demo` while the demo agent runs and
`agent` under `--no-demo-agent` (whoever holds its token plays it); both keep their tokens
across runs, and a conversation stays with the agent it began with. `lineup agent mcp`
(`peers/agent/mcp`) is another agent of this kind, outside the runtime: an MCP server
(stdio, or Streamable HTTP on 127.0.0.1) that is the agent of one conversation for an MCP
host (docs/protocol.md, "The MCP bridge").
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

import trio

log = logging.getLogger("lineup.embedded")


@contextlib.asynccontextmanager
async def embedded_appserver(data_dir: Path, *, demo_agent: bool = True) -> AsyncIterator[str]:
    """Serve an AppServer (and the demo agent) for the block; yields its URL."""
    from actors.runtime_token import keep_token
    from peers.agent import run_demo_agent
    from peers.appserver import DEFAULT_AGENT_ID, OWN_AGENT_ID, AppServer, write_endpoint

    appserver_dir = data_dir / "appserver"
    server = AppServer(appserver_dir, agents=(DEFAULT_AGENT_ID if demo_agent else OWN_AGENT_ID,))
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        endpoint = write_endpoint(appserver_dir, server.url)
        data_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (once, at start)
        token = server.credentials.runtime_token
        kept = await trio.to_thread.run_sync(keep_token, data_dir, token, dict(os.environ))
        log.info("the AppServer token is kept in the %s", kept)
        if demo_agent:
            credentials = server.credentials
            await nursery.start(
                lambda task_status: run_demo_agent(
                    server.url,
                    agent_id=credentials.agent_id,
                    token=credentials.agent_token,
                    state_dir=appserver_dir / "agents" / credentials.agent_id,
                    log=lambda line: log.info("demo agent: %s", line),
                    task_status=task_status,
                )
            )
        try:
            yield server.url
        finally:
            with contextlib.suppress(OSError):
                endpoint.unlink()
            nursery.cancel_scope.cancel()
