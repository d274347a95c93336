"""A tool call's durable record, its states, and the envelopes the agent gets about it.

    accepted → (starting → waiting)? → running → (deadline)? → succeeded | failed
    (refused before acceptance: failed at once, with the refusal's code)

Every envelope about a call has an id derived from the call's own envelope id and a fixed
slot, so whichever path produces it (a first run or a replay after a crash) it is the same
submission, which the AppServer takes once (its idempotency key). The final outcome has one
slot: a call cannot reach the agent with two finals even if two paths race to end it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from dataclasses import dataclass, field
from typing import Any, Final

from actors.kernel import derive_id
from contracts import DEFAULT_TOOL_TIMEOUT_MS, utc_timestamp, validate_envelope

from ._deadlines import Deadline

RUNTIME_SENDER: Final = {"kind": "runtime", "id": "runtime:tool_router"}
FINAL_STATES: Final = frozenset({"succeeded", "failed"})
# Slots of the envelopes about one call (derived from the call's envelope id).
SLOT_ACCEPTED: Final = 0x21
SLOT_STARTING: Final = 0x22
SLOT_ACTIVATION: Final = 0x23
SLOT_STARTED: Final = 0x24  # a deadline operation's `started` progress
SLOT_OPERATION: Final = 0x25  # the seed of a deadline operation's id
SLOT_FINAL: Final = 0x2F
SLOT_DISPATCH: Final = 0x30  # the kernel message that hands the call to its app
# The interaction app's view of the call: one kernel message per state it reaches.
SLOT_SHOWN: Final = {
    "accepted": 0x41,
    "starting": 0x42,
    "running": 0x43,
    "started": 0x45,
    "succeeded": 0x44,
    "failed": 0x44,
}
ABSOLUTE_CAP_FACTOR: Final = 10  # progress extends a call up to ten times its timeout
MAX_ABSOLUTE_MS: Final = 86_400_000
HISTORY_LIMIT: Final = 64  # progress beyond this is still relayed, not kept in the row


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Call:
    call_id: str
    envelope_id: str
    conversation_id: str
    agent_id: str
    app_scope: str
    method: str
    contract_version: str
    arguments: dict[str, Any]
    revision: int
    instance_id: str | None = None
    state: str = "accepted"
    code: str | None = None
    detail: str | None = None
    output: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    created_ms: int = field(default_factory=now_ms)
    updated_ms: int = field(default_factory=now_ms)
    deadline_ms: int | None = None
    # Not stored: the tool's descriptor as the inventory published it.
    tool: dict[str, Any] = field(default_factory=dict, compare=False)
    previous_foreground: str | None = field(default=None, compare=False)
    # Stored in a table of its own (`tool_deadlines`), with the call's steps.
    operation: Deadline | None = field(default=None, compare=False)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Call:
        names = {f.name for f in dataclasses.fields(cls)} - {
            "tool",
            "previous_foreground",
            "operation",
        }
        values: dict[str, Any] = {k: row.get(k) for k in names}
        values["arguments"] = values.get("arguments") or {}
        values["history"] = values.get("history") or []
        call = cls(**values)
        # What the call put behind it in front (or inherited from a call that ended before
        # it) is in its history, so a restarted router still gives it back when it ends.
        for step in call.history:
            if step.get("restores"):
                call.previous_foreground = str(step["restores"])
        return call

    def to_row(self) -> dict[str, Any]:
        """Its stored fields, as they are (not copied: a row is written, or read into a
        new call by `copy`, at once)."""
        return {name: getattr(self, name) for name in _STORED}

    def copy(self) -> Call:
        """A call of its own with the same stored fields."""
        return Call.from_row(copy.deepcopy(self.to_row()))

    @property
    def done(self) -> bool:
        return self.state in FINAL_STATES

    def note(self, event: str, **facts: Any) -> None:
        """A step of the call's history (kept short: progress beyond the limit is not)."""
        self.updated_ms = now_ms()
        if len(self.history) < HISTORY_LIMIT or event != "progress":
            self.history.append({"at_ms": self.updated_ms, "event": event, **facts})

    def arm(self) -> None:
        """The call showed life: it may take its timeout again, up to its absolute cap."""
        timeout = int(self.tool.get("timeout_ms", DEFAULT_TOOL_TIMEOUT_MS))
        cap = self.created_ms + min(timeout * ABSOLUTE_CAP_FACTOR, MAX_ABSOLUTE_MS)
        self.deadline_ms = min(now_ms() + timeout, cap)

    def slot_id(self, slot: int) -> str:
        return derive_id(self.envelope_id, slot)


# What a call's row holds: every field but the descriptor, the foreground to restore and the
# deadline operation (a table of its own).
_STORED: Final = tuple(
    f.name
    for f in dataclasses.fields(Call)
    if f.name not in ("tool", "previous_foreground", "operation")
)


def envelope(
    call: Call,
    type_: str,
    payload: dict[str, Any],
    *,
    id: str,
    reply_to: str | None = None,
    from_app: bool = False,
) -> dict[str, Any]:
    """An envelope about `call` for the agent: from the app for what the app reported
    (progress, its result or error), else from the runtime's tool router."""
    scope: dict[str, Any] = {"app_scope": call.app_scope, "conversation_id": call.conversation_id}
    if call.instance_id:
        scope["instance_id"] = call.instance_id
    if call.operation is not None:
        scope["operation_id"] = call.operation.operation_id
    sender = {"kind": "app", "id": call.app_scope} if from_app else RUNTIME_SENDER
    return validate_envelope(
        {
            "v": 1,
            "id": id,
            "type": type_,
            "timestamp": utc_timestamp(),
            "sender": sender,
            "target": {"kind": "runtime", "app_scope": call.app_scope},
            "scope": scope,
            "correlation": {"call_id": call.call_id, "reply_to": reply_to or call.envelope_id},
            "payload": payload,
        }
    ).to_dict()


def shown(call: Call, state: str, **facts: Any) -> dict[str, Any]:
    """A step of the call as the interaction app shows it in the conversation."""
    step = {
        "call_id": call.call_id,
        "conversation_id": call.conversation_id,
        "app_scope": call.app_scope,
        "method": call.method,
        "state": state,
    }
    return {**step, **{k: v for k, v in facts.items() if v is not None}}


def outbox_item(env: dict[str, Any]) -> dict[str, Any]:
    """An envelope for the agent as the transport submits it (`transport.submit`), under its
    id as the AppServer's idempotency key."""
    return {
        "key": env["id"],
        "envelope": json.dumps(env, separators=(",", ":")),
        "conversation_id": env["scope"]["conversation_id"],
    }


def final_envelope(call: Call, *, id: str, reply_to: str | None = None) -> dict[str, Any]:
    """The call's one final outcome, as recorded."""
    from_app = bool(call.history and call.history[-1].get("from_app"))
    if call.state == "succeeded":
        return envelope(
            call,
            "lineup.tool.result",
            {"output": call.output or {}},
            id=id,
            reply_to=reply_to,
            from_app=from_app,
        )
    payload: dict[str, Any] = {"code": call.code, "retryable": False}
    if call.detail:
        payload["message"] = call.detail[:500]
    return envelope(call, "lineup.tool.error", payload, id=id, reply_to=reply_to, from_app=from_app)
