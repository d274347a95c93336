"""`lineup agent mcp`: an MCP server that is the agent of one conversation on the AppServer,
so any MCP host (a desktop assistant, an IDE, a script on the official SDK) drives the
user's apps through the runtime's tool calls.

How the layers fit:

- `_names`: an app's tool as an MCP tool name (`whiteboard_board-create`) and back;
- `_tools`: inventory tools as MCP tool descriptors, the bridge's own two (send the user a
  message, read what the user wrote), a call's one final as an MCP result;
- `_ledger`: the bridge's SQLite file: each request's ids and one outcome (exactly once
  across restarts), and the user's messages by cursor;
- `_calls`: a call followed to its final, outside the MCP request that asked for it, with
  the stale-revision retry and the cancel;
- `_bridge`: the MCP server's handlers, the list-changed announcements, the inbox reader;
- `_serve`: the bridge running over stdio, or Streamable HTTP on 127.0.0.1 behind a key.

It needs the official MCP SDK (`pip install 'lineup-runtime[mcp]'`), which nothing else
imports: `peers.agent` does not import this package.
"""

from ._bridge import IDEMPOTENCY_KEY
from ._ledger import LEDGER_FILE
from ._names import natural_tool, tool_name
from ._serve import KEY_FILE, BridgeBusy, BridgeSettings, serve_http, serve_stdio
from ._tools import BRIDGE_TOOLS, META_CODE, mcp_tool

__all__ = [
    "BRIDGE_TOOLS",
    "IDEMPOTENCY_KEY",
    "KEY_FILE",
    "LEDGER_FILE",
    "META_CODE",
    "BridgeBusy",
    "BridgeSettings",
    "mcp_tool",
    "natural_tool",
    "serve_http",
    "serve_stdio",
    "tool_name",
]
