"""The message catalogue: every canonical type, its payload, and who may send it where.

This table is where the three separate entry kinds are enforced. A remote agent
tool call (`lineup.tool.invoke`), a local UI action (`lineup.ui.action`) and a host
lifecycle intent (`lineup.host.intent`) are different types with disjoint sender kinds and
their own audit types, so no reuse of an internal business action can turn a person's
click into something that looks like the agent's call, or the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import TypeAdapter

from contracts._payloads import (
    ChatMessage,
    HostIntent,
    InteractionRequest,
    InteractionResponse,
    InteractionWithdraw,
    RuntimeStatus,
    StatePatch,
    SurfaceClose,
    SurfaceOpen,
    TaskProgress,
    UiAction,
)
from contracts._tools import (
    Inventory,
    ToolAccepted,
    ToolActivationCancelled,
    ToolActivationFailed,
    ToolActivationReady,
    ToolCancel,
    ToolError,
    ToolInvoke,
    ToolProgress,
    ToolResult,
    ToolStarting,
)

SenderKind = Literal["agent", "runtime", "app", "user", "host"]
TargetKind = Literal["runtime", "app"]
SENDER_KINDS: Final[frozenset[str]] = frozenset({"agent", "runtime", "app", "user", "host"})
TARGET_KINDS: Final[frozenset[str]] = frozenset({"runtime", "app"})


class EntryKind(StrEnum):
    """The three ways an outside party can ask the runtime to act."""

    AGENT_TOOL_CALL = "agent_tool_call"
    UI_ACTION = "ui_action"
    HOST_INTENT = "host_intent"


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """What the contract says about one message type."""

    type: str
    payload: TypeAdapter[Any]
    senders: frozenset[str]
    targets: frozenset[str]
    summary: str
    entry: EntryKind | None = None
    needs_call_id: bool = False
    needs_inventory_revision: bool = False
    needs_instance: bool = False
    global_only: bool = False
    # Sent by the agent and deliverable into an app: may appear in `agent_subscriptions`.
    subscribable: bool = False

    @property
    def audit_type(self) -> str:
        """The audit record kind: entry kinds are audited apart, everything else as messages."""
        return f"audit.{self.entry.value}" if self.entry else "audit.message"


def _spec(
    type_: str, payload: Any, senders: str, targets: str, summary: str, **flags: Any
) -> MessageSpec:
    return MessageSpec(
        type=type_,
        payload=TypeAdapter(payload),
        senders=frozenset(senders.split()),
        targets=frozenset(targets.split()),
        summary=summary,
        **flags,
    )


_RECEIPT = {"needs_call_id": True}
_SPECS: Final = (
    _spec("lineup.message", ChatMessage, "agent user runtime", "app runtime",
          "A text turn in a conversation.", subscribable=True),
    _spec("lineup.task.progress", TaskProgress, "agent", "app",
          "The agent reports a task's progress.", subscribable=True),
    _spec("lineup.interaction.request", InteractionRequest, "agent", "app",
          "A choice, confirm or input question for the user.", subscribable=True),
    _spec("lineup.interaction.response", InteractionResponse, "user", "runtime",
          "The user's answer to an interaction request."),
    _spec("lineup.interaction.withdraw", InteractionWithdraw, "agent", "app",
          "The agent no longer asks a question it asked.", subscribable=True),
    _spec("lineup.surface.open", SurfaceOpen, "agent runtime", "app",
          "Show an app entrypoint for an instance.", needs_instance=True, subscribable=True),
    _spec("lineup.surface.close", SurfaceClose, "agent runtime", "app",
          "Close an instance's surface.", needs_instance=True, subscribable=True),
    _spec("lineup.app.state.patch", StatePatch, "agent runtime", "app",
          "A merge patch to an instance's state.", needs_instance=True, subscribable=True),
    _spec("lineup.tool.invoke", ToolInvoke, "agent", "app runtime",
          "The agent calls a tool from the inventory.", entry=EntryKind.AGENT_TOOL_CALL,
          needs_call_id=True, needs_inventory_revision=True, subscribable=True),
    _spec("lineup.tool.cancel", ToolCancel, "agent", "runtime",
          "The agent withdraws one of its calls.", needs_call_id=True),
    _spec("lineup.tool.accepted", ToolAccepted, "runtime", "runtime",
          "Receipt: the runtime has durably accepted the call.", **_RECEIPT),
    _spec("lineup.tool.starting", ToolStarting, "runtime", "runtime",
          "Receipt: the call's app is being activated.", **_RECEIPT),
    _spec("lineup.tool.activation_ready", ToolActivationReady, "runtime", "runtime",
          "Receipt: the app instance is ready.", **_RECEIPT),
    _spec("lineup.tool.activation_failed", ToolActivationFailed, "runtime", "runtime",
          "Receipt: activation failed.", **_RECEIPT),
    _spec("lineup.tool.activation_cancelled", ToolActivationCancelled, "runtime",
          "runtime", "Receipt: activation was cancelled.", **_RECEIPT),
    _spec("lineup.tool.progress", ToolProgress, "runtime app", "runtime",
          "Business progress of a call.", **_RECEIPT),
    _spec("lineup.tool.result", ToolResult, "runtime app", "runtime",
          "The call's one final result.", **_RECEIPT),
    _spec("lineup.tool.error", ToolError, "runtime app", "runtime",
          "The call's one final error.", **_RECEIPT),
    _spec("lineup.inventory", Inventory, "runtime", "runtime",
          "The revisioned inventory published to the agent.", needs_inventory_revision=True),
    _spec("lineup.ui.action", UiAction, "user app", "app runtime",
          "A declarative action taken in a local UI.", entry=EntryKind.UI_ACTION),
    _spec("lineup.host.intent", HostIntent, "host", "runtime",
          "A lifecycle intent from the host shell.", entry=EntryKind.HOST_INTENT),
    _spec("lineup.runtime.status", RuntimeStatus, "runtime", "runtime",
          "The runtime lifecycle state.", global_only=True),
)  # fmt: skip

MESSAGE_TYPES: Final[dict[str, MessageSpec]] = {spec.type: spec for spec in _SPECS}
# Types an app may list in its manifest's `agent_subscriptions`.
SUBSCRIBABLE_TYPES: Final = frozenset(spec.type for spec in _SPECS if spec.subscribable)
ENTRY_TYPES: Final = {spec.entry: spec.type for spec in _SPECS if spec.entry is not None}
