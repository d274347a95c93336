"""`Bridge`: the MCP server that is the agent of one conversation on the AppServer.

What each MCP message becomes (docs/protocol.md, "The MCP bridge"):

- `tools/list`: the conversation's latest inventory, each tool as an MCP tool (`_tools`),
  and the bridge's own two (send the user a message, read what the user wrote);
- `notifications/tools/list_changed`: sent when the inventory's revision changes, on each
  handshake-era connection and on each 2026 `subscriptions/listen` stream;
- `tools/call`: a `lineup.tool.invoke` followed to its one final (`_calls`), its receipts
  and progress as `notifications/progress` when the request has a progress token, its final
  as the result; `_meta` `lineup/idempotency-key` makes it run at most once whoever asks
  again, whenever;
- `notifications/cancelled`: the call's `lineup.tool.cancel`.

One task reads the agent's inbox: the user's messages of the conversation go into the
ledger (what `runtime_read_messages` reads), a final that reaches the bridge outside a
follower is recorded for its request, and an inventory wakes the calls waiting for one and
the announcement of a change.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from typing import Any, Final

import mcp_types as types
import trio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError

from contracts import ContractError, check_tool_arguments

from .. import AgentClient, AgentMessage, SubmitRejected
from .._client import TOOL_FINAL_TYPES
from ._calls import Calls, error_final, wait_lines
from ._ledger import Ledger, canonical
from ._tools import (
    BRIDGE_TOOLS,
    READ_METHOD,
    SEND_METHOD,
    error_result,
    final_result,
    mcp_tool,
    output_result,
)

log = logging.getLogger("lineup.mcp")

# The `_meta` key of a `tools/call` that names the request for good: asked again with it,
# after anything, it gets the same call's outcome.
IDEMPOTENCY_KEY: Final = "lineup/idempotency-key"
MAX_KEY: Final = 200
# How long a listing waits for the AppServer's backlog (and so the latest inventory).
CATCH_UP_S: Final = 10.0
# Requests remembered for a later `notifications/cancelled` (which arrives after the
# request's own handler was interrupted), and handshake connections told of changes.
_REQUESTS_KEPT: Final = 1024
_SESSIONS_KEPT: Final = 64
READ_LIMIT_DEFAULT: Final = 20


def _instructions(conversation_id: str) -> str:
    return (
        f"The user's apps in LineUp conversation {conversation_id}: each app tool is named "
        "<app>_<method, '.' written '-'>; runtime_send_message writes to the user in the "
        "LineUp chat and runtime_read_messages reads what they wrote. A tools/call with "
        f'_meta {{"{IDEMPOTENCY_KEY}": KEY}} runs at most once, however often it is asked.'
    )


class Bridge:
    def __init__(
        self,
        client: AgentClient,
        ledger: Ledger,
        conversation_id: str,
        nursery: trio.Nursery,
        *,
        version: str,
    ) -> None:
        self.client = client
        self.ledger = ledger
        self.conversation_id = conversation_id
        self.calls = Calls(client, ledger, conversation_id, nursery)
        self._bus = InMemorySubscriptionBus()
        self._sessions: deque[ServerSession] = deque(maxlen=_SESSIONS_KEPT)
        self._requests: OrderedDict[tuple[str | None, types.RequestId], str] = OrderedDict()
        inventory = self.calls.inventory()
        self._announced = None if inventory is None else inventory.revision
        self._messages_changed = trio.Event()
        self._caught_up = False
        self.server: Server[Any] = Server(
            "lineup",
            version=version,
            title="LineUp",
            instructions=_instructions(conversation_id),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        self.server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._initialized
        )
        self.server.add_notification_handler(
            "notifications/cancelled", types.CancelledNotificationParams, self._cancelled
        )

    def initialization_options(self) -> InitializationOptions:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    # -- the inventory -----------------------------------------------------------------------

    async def _catch_up(self) -> None:
        """Until the agent has read its backlog, within `CATCH_UP_S` (then what it holds
        is listed: the inventory kept in its state dir, or none)."""
        if not self._caught_up:
            with trio.move_on_after(CATCH_UP_S):
                await self.client.wait_caught_up()
                self._caught_up = True

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await self._catch_up()
        tools = [mcp_tool(tool) for tool in self.calls.tools()]
        return types.ListToolsResult(tools=[*tools, *map(mcp_tool, BRIDGE_TOOLS.values())])

    async def _initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        self._sessions.append(ctx.session)

    async def _announce(self) -> None:
        """Tells every client whose tools changed: the revision is not the one announced."""
        inventory = self.calls.inventory()
        revision = None if inventory is None else inventory.revision
        if revision == self._announced:
            return
        self._announced = revision
        for session in list(self._sessions):
            try:
                await session.send_tool_list_changed()
            except Exception:  # a connection that has gone: forget it
                log.debug("list_changed not sent: connection gone", exc_info=True)
                self._sessions.remove(session)
        await self._bus.publish(ToolsListChanged())

    # -- the agent's inbox ---------------------------------------------------------------------

    async def read_inbox(self) -> None:
        """Takes each message the agent receives, then marks it processed (so the cursor
        moves past it only once it is stored)."""
        while True:
            message = await self.client.receive()
            await self._take(message)
            self.client.processed(message)

    async def _take(self, message: AgentMessage) -> None:
        if message.type == "lineup.inventory":
            self.calls.note_inventory()
            await self._announce()
        elif message.type in TOOL_FINAL_TYPES:
            self.calls.record_final(message)
        elif (
            message.type == "lineup.message"
            and message.sender.kind == "user"
            and message.conversation_id == self.conversation_id
        ):
            payload = message.payload()
            self.ledger.add_user_message(
                message.seq,
                message.id,
                payload.text,
                payload.format,
                message.envelope.timestamp,
                mode=payload.mode,
            )
            self._messages_changed.set()
            self._messages_changed = trio.Event()

    # -- calls -----------------------------------------------------------------------------------

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        key = (params.meta or {}).get(IDEMPOTENCY_KEY)
        if key is not None and not (isinstance(key, str) and 0 < len(key) <= MAX_KEY):
            return error_result(
                "invalid_arguments",
                f"_meta {IDEMPOTENCY_KEY!r} must be a string of 1 to {MAX_KEY} characters",
            )
        own = BRIDGE_TOOLS.get(params.name)
        if own is not None:
            try:
                check_tool_arguments(own, arguments)
            except ContractError as exc:
                return error_result(str(exc.code), exc.detail)
            if own.method == SEND_METHOD:
                return await self._send(params.name, arguments, key)
            assert own.method == READ_METHOD
            return await self._read(arguments)
        await self._catch_up()
        begun = self.calls.begin(params.name, arguments, key)
        if isinstance(begun, dict):
            return final_result(begun)
        self._remember(ctx, begun.request.key)
        told = 0

        async def report(line: str) -> None:
            nonlocal told
            told += 1  # MCP's progress must rise with each notification: it counts them
            await ctx.session.report_progress(told, None, line)

        follower = await wait_lines(begun, report)
        if follower.final is None:
            raise MCPError(types.INTERNAL_ERROR, follower.failure or "the call was not followed")
        return final_result(follower.final)

    def _remember(self, ctx: ServerRequestContext[Any], key: str) -> None:
        if ctx.request_id is None:
            return
        self._requests[(_connection_of(ctx), ctx.request_id)] = key
        while len(self._requests) > _REQUESTS_KEPT:
            self._requests.popitem(last=False)

    async def _cancelled(
        self, ctx: ServerRequestContext[Any], params: types.CancelledNotificationParams
    ) -> None:
        if params.request_id is None:
            return
        key = self._requests.pop((_connection_of(ctx), params.request_id), None)
        if key is not None:
            await self.calls.cancel(key)

    # -- the bridge's own tools ------------------------------------------------------------------

    async def _send(
        self, name: str, arguments: dict[str, Any], key: str | None
    ) -> types.CallToolResult:
        asked = canonical({"tool": name, "arguments": arguments})
        request = self.ledger.begin(key, asked, tool_call=False)
        if request.request != asked:
            return final_result(
                error_final(
                    "duplicate",
                    "this idempotency key was used for another message; use a new key",
                )
            )
        if request.final is None:
            try:
                sent = await self.client.send_text(
                    self.conversation_id,
                    arguments["text"],
                    format=arguments.get("format", "markdown"),
                    message_id=request.root,
                )
            except SubmitRejected as refused:
                final = error_final(refused.code, refused.detail)
            else:
                output = {"sent": True, "duplicate": sent.duplicate}
                final = {"type": "lineup.tool.result", "payload": {"output": output}}
            self.ledger.finish(request.key, final)
            return final_result(final)
        return final_result(request.final)

    async def _read(self, arguments: dict[str, Any]) -> types.CallToolResult:
        since = int(arguments.get("since", 0))
        limit = int(arguments.get("limit", READ_LIMIT_DEFAULT))
        messages = self.ledger.user_messages(since, limit)
        with trio.move_on_after(float(arguments.get("wait_seconds", 0))):
            while not messages:
                await self._messages_changed.wait()
                messages = self.ledger.user_messages(since, limit)
        cursor = messages[-1]["cursor"] if messages else since
        return output_result({"messages": messages, "cursor": cursor})


def _connection_of(ctx: ServerRequestContext[Any]) -> str | None:
    """Which connection a request came on: its Streamable HTTP session, or the one stdio
    connection (request ids are unique within a connection only)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    return None if headers is None else headers.get("mcp-session-id")
