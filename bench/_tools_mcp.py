"""(c) and (d) of `lineup bench tools`: the same agent's calls made by an MCP client.

(c) the bridge: an MCP client in the bench's process (the official SDK's `Client`, the
handshake era today's hosts speak) starts `lineup agent mcp` over stdio, as a host does,
on (b)'s AppServer and conversation, and calls the bench's tool by its MCP name: MCP client
→ stdio → the bridge → AppServer → runtime → the app, and back. (d) the same client code on
`python -m bench._mcp_echo`, the SDK's own stdio server with a trivial `echo` tool: one MCP
round trip with nothing behind it.

Both clients list their tools, then make `--mcp-calls` calls one at a time, taken in turn
with a call of (b)'s own agent: (c), (b), (d), (c), (b), (d)... so a loaded machine weighs
on the three alike; the first of each is a warm-up (the bridge catches up with the AppServer
then). Each is timed in the bench's process (`perf_counter_ns`) around `call_tool` (for (b),
`Caller.one`). Every call must end without `isError`, with its argument back.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

from ._envelope import percentile
from ._procs import BenchError
from ._tools_flow import CONVERSATION, Caller


def require_mcp() -> None:
    """BenchError before anything is measured when the MCP SDK is not installed."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise BenchError(
            "(c) and (d) need the MCP SDK: install it with `pip install 'lineup-runtime[mcp]'`"
            " (in a checkout: `.venv/bin/pip install -e '.[mcp]'`)"
        ) from None


@contextlib.asynccontextmanager
async def _client(params: Any, tool: str, errlog: TextIO, name: str) -> AsyncIterator[Any]:
    """An MCP client on the server `params` starts, its tools listed and `tool` among them."""
    from mcp import Client
    from mcp.client.stdio import stdio_client

    async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        if tool not in listed:
            raise BenchError(f"{name}: {tool} is not listed ({sorted(listed)})")
        yield client


async def _one(client: Any, tool: str, n: int, name: str) -> float:
    started = time.perf_counter_ns()
    result = await client.call_tool(tool, {"n": n})
    if result.is_error or result.structured_content != {"n": n}:
        raise BenchError(f"{name}: call {n} ended {result.content}")
    return (time.perf_counter_ns() - started) / 1e6


async def measure_mcp(
    caller: Caller, url: str, appserver_dir: Path, work: Path, count: int
) -> dict[str, Any]:
    """(c), (d) and (b)'s own call, `count` of each one at a time, taken in turn (so a
    loaded machine weighs on the three alike): their round trips (ms)."""
    from mcp import StdioServerParameters

    from peers.agent.mcp import tool_name

    from .toolapp import APP_SCOPE, METHOD

    bridge = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "lineup.cli",
            "agent",
            "mcp",
            "--appserver",
            url,
            "--appserver-dir",
            str(appserver_dir),
            "--conversation",
            CONVERSATION,
            "--state-dir",
            str(work / "mcp-bridge"),
        ],
    )
    echo = StdioServerParameters(command=sys.executable, args=["-m", "bench._mcp_echo"])
    bridged_tool = tool_name(APP_SCOPE, METHOD)
    log = work / "logs" / "mcp.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    times: dict[str, list[float]] = {"bridged": [], "bare": [], "runtime": []}
    with log.open("a") as errlog:
        async with (
            _client(bridge, bridged_tool, errlog, "(c) bridge") as bridged,
            _client(echo, "echo", errlog, "(d) bare MCP") as bare,
        ):
            for n in range(count + 1):  # the first of each is the warm-up
                c = await _one(bridged, bridged_tool, n, "(c) bridge")
                b = (await caller.one()).round_trip_ms
                d = await _one(bare, "echo", n, "(d) bare MCP")
                if n:
                    times["bridged"].append(c)
                    times["runtime"].append(b)
                    times["bare"].append(d)
    return times


def mcp_figures(mcp: dict[str, Any]) -> dict[str, Any]:
    """The keys of the record: (c)'s and (d)'s p50 and p99, the runtime's own call taken
    in turn with them, and (c)'s time beyond that call in units of (d) (target <= 2)."""
    bridged, bare = mcp["bridged"], mcp["bare"]
    call_p50, bare_p50 = percentile(bridged, 50), percentile(bare, 50)
    runtime_p50_ms = percentile(mcp["runtime"], 50)
    return {
        "mcp_runtime_p50_ms": round(runtime_p50_ms, 3),
        "mcp_calls": len(bridged),
        "mcp_call_p50_ms": round(call_p50, 3),
        "mcp_call_p99_ms": round(percentile(bridged, 99), 3),
        "mcp_bare_p50_ms": round(bare_p50, 3),
        "mcp_bare_p99_ms": round(percentile(bare, 99), 3),
        "mcp_call_ratio": round((call_p50 - runtime_p50_ms) / bare_p50, 2),
    }
