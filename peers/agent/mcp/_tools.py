"""What an MCP client sees: each inventory tool as an MCP tool, the bridge's own two tools
for the conversation, and a call's one final as a `CallToolResult`.

The bridge's own tools are tool descriptors of the `runtime` scope, so they are named,
described and checked (`check_tool_arguments`, the runtime's own check, with the JSON
pointer of the first violation) exactly as an app's tools are.
"""

from __future__ import annotations

import json
from typing import Any, Final

import mcp_types as types

from contracts import ChatMessage, InventoryTool

from ._names import BRIDGE_SCOPE, tool_name

# `_meta` keys of a listed tool: where it comes from, so a client can show or log it.
META_APP: Final = "lineup/app-scope"
META_METHOD: Final = "lineup/method"
META_VERSION: Final = "lineup/contract-version"
# `_meta` key of an error result: its code, also written first in its text.
META_CODE: Final = "lineup/code"

SEND_METHOD: Final = "send_message"
READ_METHOD: Final = "read_messages"
READ_LIMIT: Final = 100
READ_WAIT_S: Final = 60


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", **body}


# What the agent sends is a chat message: its input is `lineup.message`'s own payload shape,
# less what only the user's side says of a turn (its mode, its recording).
_CHAT_MESSAGE = ChatMessage.model_json_schema(mode="validation", by_alias=True)
_AGENT_SAYS: Final = ("text", "format")
SEND_TOOL: Final = InventoryTool(
    app_scope=BRIDGE_SCOPE,
    method=SEND_METHOD,
    contract_version="1",
    title="Send the user a message",
    description="Writes a message to the user in the LineUp chat of this conversation. "
    "Markdown (the default format) is shown formatted, never as raw HTML.",
    input_schema=_schema(
        {
            "properties": {key: _CHAT_MESSAGE["properties"][key] for key in _AGENT_SAYS},
            "required": _CHAT_MESSAGE["required"],
            "additionalProperties": False,
        }
    ),
    output_schema=_schema(
        {
            "properties": {"sent": {"const": True}, "duplicate": {"type": "boolean"}},
            "required": ["sent", "duplicate"],
            "additionalProperties": False,
        }
    ),
    risk="low",
)
_MESSAGE = {
    "type": "object",
    "properties": {
        "cursor": {"type": "integer", "minimum": 1},
        "text": {"type": "string"},
        "format": {"enum": ["markdown", "plain"]},
        "at": {"type": "string"},
        "mode": {"enum": ["im", "audio"]},
    },
    "required": ["cursor", "text", "format", "at", "mode"],
    "additionalProperties": False,
}
READ_TOOL: Final = InventoryTool(
    app_scope=BRIDGE_SCOPE,
    method=READ_METHOD,
    contract_version="1",
    title="Read what the user wrote",
    description="The messages the user wrote in the LineUp chat of this conversation after "
    "`since` (the `cursor` of an earlier answer; 0 or absent: from the first), oldest first, "
    f"at most `limit` (default 20, at most {READ_LIMIT}). With `wait_seconds`, waits up to "
    "that long for one when there is none yet. Pass the answer's `cursor` as `since` next. "
    "A message's `mode` is the conversation's when the user sent it: `audio` when they talk "
    "and hear the answers spoken (keep those short and easy to say), `im` when they type.",
    input_schema=_schema(
        {
            "properties": {
                "since": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1, "maximum": READ_LIMIT},
                "wait_seconds": {"type": "number", "minimum": 0, "maximum": READ_WAIT_S},
            },
            "additionalProperties": False,
        }
    ),
    output_schema=_schema(
        {
            "properties": {
                "messages": {"type": "array", "items": _MESSAGE},
                "cursor": {"type": "integer", "minimum": 0},
            },
            "required": ["messages", "cursor"],
            "additionalProperties": False,
        }
    ),
    call_model="query",
    idempotent=True,
    risk="low",
)
BRIDGE_TOOLS: Final = {tool_name(t.app_scope, t.method): t for t in (SEND_TOOL, READ_TOOL)}


def mcp_tool(tool: InventoryTool) -> types.Tool:
    """The MCP descriptor of an inventory tool. The hints follow the descriptor: read-only
    for a `query` (or a declared `read_only_hint`), idempotent as declared, destructive for
    a `high` risk unless the app declares otherwise; a read-only tool has no destructive
    hint (MCP reads it only for tools that change something)."""
    hints = tool.annotations
    read_only = (
        hints.read_only_hint
        if hints is not None and hints.read_only_hint is not None
        else tool.call_model == "query"
    )
    destructive: bool | None = None
    if not read_only:
        declared = hints.destructive_hint if hints is not None else None
        destructive = declared if declared is not None else tool.risk == "high"
    return types.Tool(
        name=tool_name(tool.app_scope, tool.method),
        title=tool.title,
        description=tool.description or tool.title,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=tool.idempotent,
            open_world_hint=hints.open_world_hint if hints is not None else None,
        ),
        _meta={
            META_APP: tool.app_scope,
            META_METHOD: tool.method,
            META_VERSION: tool.contract_version,
        },
    )


def output_result(output: dict[str, Any]) -> types.CallToolResult:
    """A result: the output as `structuredContent`, and as JSON text for a client that
    reads only text."""
    text = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=output, is_error=False
    )


def error_result(code: str, message: str | None) -> types.CallToolResult:
    """A definite error: `isError`, its text `code: message`, the code in `_meta` too."""
    text = f"{code}: {message}" if message else code
    return types.CallToolResult(
        content=[types.TextContent(text=text)], is_error=True, _meta={META_CODE: code}
    )


def final_result(final: dict[str, Any]) -> types.CallToolResult:
    """A call's recorded final (`{"type", "payload"}` of `lineup.tool.result` or
    `lineup.tool.error`) as the MCP result."""
    payload = final["payload"]
    if final["type"] == "lineup.tool.result":
        return output_result(dict(payload["output"]))
    return error_result(str(payload["code"]), payload.get("message"))
