"""A tool call through the bridge: from an MCP `tools/call` to the runtime's one final.

Each request becomes a `Follower`, a task of the bridge (not of the MCP request), that
submits the call and follows it to its final, records that in the ledger, and tells the
requests waiting on it of each receipt and progress on the way. So an MCP request that is
cancelled or whose connection goes away leaves the call followed to its end, and a request
asked again while its call runs joins the same follower.

**Which revision.** A call names the inventory revision the bridge holds. Refused
`stale_inventory_revision` (the runtime published a newer one that has not reached the
bridge yet), the bridge waits for it and, only if the tool is unchanged in it (the same
descriptor), calls once more with the request's next call id; a changed tool ends the call
with that refusal, and the client has been told its tools changed.

**Names no longer listed.** A name the inventory does not list but that spells an app's
tool (`whiteboard_board-summary` after the whiteboard was disabled) is called anyway, for
the runtime to say why it cannot run (`app_disabled`, `app_not_installed`,
`tool_not_visible`): the agent gets the definite reason, not a guess of the bridge's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from contracts import Inventory, InventoryTool

from .. import AgentClient, AgentError, AgentMessage, LinkFailed, SubmitRejected
from ._ledger import Ledger, Request, canonical
from ._names import natural_tool, tool_name

log = logging.getLogger("lineup.mcp")

# How long a stale revision's call waits for the newer inventory before it gives up.
REFRESH_WAIT_S: Final = 10.0
STALE: Final = "stale_inventory_revision"


@dataclass(frozen=True, slots=True)
class Target:
    """What a tool name calls: the app, the method and the contract version."""

    app_scope: str
    method: str
    contract_version: str


def error_final(code: str, message: str) -> dict[str, Any]:
    return {"type": "lineup.tool.error", "payload": {"code": code, "message": message}}


def payload_of(message: AgentMessage) -> dict[str, Any]:
    """A message's payload object (every tool receipt's payload is one)."""
    payload = message.envelope.payload
    assert isinstance(payload, dict)
    return payload


def progress_line(event: AgentMessage, app_title: str) -> str | None:
    """What a receipt or a progress says, in words; None for those the final says better."""
    kind = event.type.removeprefix("lineup.tool.")
    if kind == "accepted":
        return "accepted by the runtime"
    if kind == "starting":
        return f"starting {app_title}"
    if kind == "activation_ready":
        return f"{app_title} is ready"
    if kind != "progress":
        return None
    payload = payload_of(event)
    parts = [
        payload.get("stage"),
        None if payload.get("percent") is None else f"{payload['percent']}%",
        payload.get("message"),
        f"until {payload['ends_at']}" if payload.get("ends_at") else None,
    ]
    return ", ".join(str(part) for part in parts if part) or "progress"


@dataclass(eq=False)
class Follower:
    """One request's call, followed to its one final."""

    request: Request
    target: Target
    arguments: dict[str, Any]
    lines: list[str] = field(default_factory=list)  # receipts and progress, in order
    final: dict[str, Any] | None = None
    failure: str | None = None  # why it was not followed to its end
    changed: trio.Event = field(default_factory=trio.Event)

    @property
    def over(self) -> bool:
        return self.final is not None or self.failure is not None

    def tell(self, line: str) -> None:
        self.lines.append(line)
        self._wake()

    def end(self, final: dict[str, Any] | None, failure: str | None = None) -> None:
        self.final, self.failure = final, failure
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()


class Calls:
    """The bridge's calls in one conversation, on one agent client and one ledger."""

    def __init__(
        self,
        client: AgentClient,
        ledger: Ledger,
        conversation_id: str,
        nursery: trio.Nursery,
    ) -> None:
        self.client = client
        self.ledger = ledger
        self.conversation_id = conversation_id
        self._nursery = nursery
        self._following: dict[str, Follower] = {}
        # Every tool the bridge has listed, by name: a name no longer listed still calls
        # the contract version it had.
        self._listed: dict[str, InventoryTool] = {}
        self.inventory_changed = trio.Event()

    # -- the inventory -----------------------------------------------------------------------

    def inventory(self) -> Inventory | None:
        return self.client.inventory(self.conversation_id)

    def tools(self) -> list[InventoryTool]:
        inventory = self.inventory()
        tools = [] if inventory is None else list(inventory.tools)
        for tool in tools:
            self._listed[tool_name(tool.app_scope, tool.method)] = tool
        return tools

    def app_title(self, app_scope: str) -> str:
        inventory = self.inventory()
        for app in [] if inventory is None else inventory.apps:
            if app.app_scope == app_scope and app.title:
                return app.title
        return app_scope

    def target(self, name: str) -> Target | None:
        for tool in self.tools():
            if tool_name(tool.app_scope, tool.method) == name:
                return Target(tool.app_scope, tool.method, tool.contract_version)
        spelled = natural_tool(name)
        if spelled is None:
            return None
        known = self._listed.get(name)
        return Target(*spelled, known.contract_version if known is not None else "1")

    def note_inventory(self) -> None:
        """A newer inventory may have arrived: wake the calls waiting for one."""
        self.inventory_changed.set()
        self.inventory_changed = trio.Event()

    async def _newer_than(self, revision: str) -> Inventory | None:
        """The inventory once its revision is past `revision`, within `REFRESH_WAIT_S`."""
        with trio.move_on_after(REFRESH_WAIT_S):
            while True:
                inventory = self.inventory()
                if inventory is not None and int(inventory.revision) > int(revision):
                    return inventory
                await self.inventory_changed.wait()
        return None

    # -- calls -------------------------------------------------------------------------------

    def begin(
        self, name: str, arguments: dict[str, Any], key: str | None
    ) -> Follower | dict[str, Any]:
        """The follower of the request (started, or joined when it runs already), or its
        outcome when it has one: recorded, or the bridge's own refusal (which keeps
        nothing: nothing was sent)."""
        if self.inventory() is None:
            return error_final(
                "tool_not_visible",
                "the runtime has published no tools for this conversation yet; try again",
            )
        target = self.target(name)
        if target is None:
            return error_final(
                "tool_not_visible",
                f"no tool is named {name!r} in this conversation; list the tools again",
            )
        asked = canonical({"tool": name, "arguments": arguments})
        request = self.ledger.begin(key, asked, tool_call=True)
        if request.request != asked:
            return error_final(
                "duplicate",
                "this idempotency key was used for another tool or other arguments; "
                "use a new key for a new call",
            )
        if request.final is not None:
            return request.final
        follower = self._following.get(request.key)
        if follower is None:
            follower = Follower(request, target, arguments)
            self._following[request.key] = follower
            self._nursery.start_soon(self._follow, follower)
        return follower

    async def _follow(self, follower: Follower) -> None:
        try:
            final = await self._outcome(follower)
        except SubmitRejected as refused:  # the AppServer took nothing: nothing ran, or is kept
            follower.end(error_final(refused.code, refused.detail))
            return
        except (AgentError, LinkFailed) as exc:  # the bridge's link to the AppServer is over
            log.warning("call %s not followed to its end: %s", follower.request.call_id, exc)
            follower.end(None, f"the bridge lost the AppServer before the call ended: {exc}")
            return
        finally:
            self._following.pop(follower.request.key, None)
        self.ledger.finish(follower.request.key, final)
        follower.end(final)

    async def _outcome(self, follower: Follower) -> dict[str, Any]:
        held = self.inventory()
        assert held is not None  # `begin` saw one, and an inventory is never taken back
        final = await self._one_attempt(follower, held.revision)
        if final["type"] != "lineup.tool.error" or final["payload"]["code"] != STALE:
            return final
        newer = await self._newer_than(held.revision)
        if newer is None or not _unchanged(held, newer, follower.target):
            said = final["payload"].get("message") or "the inventory changed"
            return error_final(STALE, f"{said}; the tool changed: list the tools again")
        follower.request = self.ledger.next_attempt(follower.request)
        return await self._one_attempt(follower, newer.revision)

    async def _one_attempt(self, follower: Follower, revision: str) -> dict[str, Any]:
        target, request = follower.target, follower.request
        assert request.call_id is not None
        call = self.client.call(
            self.conversation_id,
            target.method,
            follower.arguments,
            app_scope=target.app_scope,
            revision=revision,
            call_id=request.call_id,
            contract_version=target.contract_version,
        )
        title = self.app_title(target.app_scope)
        async for event in call:
            line = progress_line(event, title)
            if line is not None:
                follower.tell(line)
        assert call.final is not None
        return {"type": call.final.type, "payload": payload_of(call.final)}

    async def cancel(self, key: str) -> None:
        """The client withdrew the request: withdraw its call (`lineup.tool.cancel`); its
        final, `cancelled_by_user` unless it had ended, is recorded as any final is."""
        follower = self._following.get(key)
        if follower is None or follower.request.call_id is None:
            return
        await self.client.cancel(
            self.conversation_id,
            follower.request.call_id,
            follower.target.app_scope,
            reason="the MCP client cancelled the request",
        )

    def record_final(self, message: AgentMessage) -> None:
        """A final reached the bridge outside any follower (the bridge restarted while the
        call ran): recorded for the request that asked for it, for when it is asked again."""
        call_id = message.call_id
        key = None if call_id is None else self.ledger.key_of_call(call_id)
        if key is not None and key not in self._following:
            self.ledger.finish(key, {"type": message.type, "payload": payload_of(message)})


def _unchanged(held: Inventory, newer: Inventory, target: Target) -> bool:
    """The tool is listed in both inventories with the same descriptor."""

    def found(inventory: Inventory) -> InventoryTool | None:
        return next(
            (
                t
                for t in inventory.tools
                if t.app_scope == target.app_scope and t.method == target.method
            ),
            None,
        )

    before, after = found(held), found(newer)
    return before is not None and after is not None and before == after


async def wait_lines(follower: Follower, report: Callable[[str], Awaitable[None]]) -> Follower:
    """Reports each receipt and progress of the follower until it is over, then returns it.
    Cancelled, it stops reporting; the follower goes on."""
    told = 0
    while True:
        changed = follower.changed
        while told < len(follower.lines):
            await report(follower.lines[told])
            told += 1
        if follower.over:
            return follower
        await changed.wait()
