"""(d) of `lineup bench tools`: the MCP SDK's own stdio server with one trivial tool, `echo`
(its arguments back as its structured result), on the same low-level `Server` and trio as
`lineup agent mcp`: what one MCP round trip over stdio costs with nothing behind it.

`python -m bench._mcp_echo` serves until its stdin ends.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import trio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOL = "echo"
_OBJECT = {"type": "object"}


async def _list(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name=TOOL, input_schema=_OBJECT, output_schema=_OBJECT)]
    )


async def _call(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    arguments = dict(params.arguments or {})
    return types.CallToolResult(
        content=[types.TextContent(text=str(arguments))], structured_content=arguments
    )


async def serve() -> None:
    server: Server[Any] = Server("bench-echo", on_list_tools=_list, on_call_tool=_call)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    trio.run(serve)
