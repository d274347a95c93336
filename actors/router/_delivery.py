"""What the router sends on: app projections, rejection envelopes, the user's envelopes.

Apps never see a raw agent envelope (the runtime never broadcasts one): they get a
projection for their own scope — id, type, conversation, sender, payload, sequence — with
no target, no routing fields of other apps, and no legacy fields.

The router sends each projection to its app once the store has committed the message
(`app.deliver`).
"""

from __future__ import annotations

from typing import Any, Final

from actors.kernel import derive_id
from contracts import (
    Code,
    ContractError,
    RuntimeEnvelope,
    utc_timestamp,
    validate_envelope,
)

ROUTER_SENDER: Final = {"kind": "runtime", "id": "runtime:router"}


def app_actor(app_scope: str) -> str:
    """The kernel name of an app's process, whose durable mailbox is its App Inbox."""
    return f"app.{app_scope}"


def project(env: RuntimeEnvelope, seq: int) -> dict[str, Any]:
    """The app-facing form of an accepted agent message."""
    view: dict[str, Any] = {
        "id": env.id,
        "type": env.type,
        "conversation_id": env.scope.conversation_id,
        "sender": {"kind": env.sender.kind, "id": env.sender.id},
        "timestamp": env.timestamp,
        "payload": env.payload,
        "seq": seq,
    }
    if env.scope.instance_id:
        view["instance_id"] = env.scope.instance_id
    if env.correlation and env.correlation.reply_to:
        view["reply_to"] = env.correlation.reply_to
    return view


def tool_call_view(env: RuntimeEnvelope, seq: int) -> dict[str, Any]:
    """What the tool router needs of an agent's `lineup.tool.invoke` or `lineup.tool.cancel`."""
    correlation = env.correlation
    return {
        "type": env.type,
        "envelope_id": env.id,
        "seq": seq,
        "conversation_id": env.scope.conversation_id,
        "agent_id": env.sender.id,
        "app_scope": env.target.app_scope,
        "call_id": correlation.call_id if correlation else None,
        "revision": correlation.inventory_revision if correlation else None,
        "payload": env.payload,
    }


def rejection_envelope(env: RuntimeEnvelope, code: str, detail: str) -> dict[str, Any] | None:
    """The answer an agent gets for a rejected message, or None if the
    rejected message names no conversation it could go to.

    A tool call is answered like any refused call, with `lineup.tool.error`; any
    other message with a runtime `lineup.message` replying to it whose text starts with the
    code. The id derives from the rejected message's, so the rejection is queued once.
    """
    base: dict[str, Any] = {
        "v": 1,
        "id": derive_id(env.id, 0x7E),
        "timestamp": utc_timestamp(),
        "sender": ROUTER_SENDER,
        "target": {"kind": "runtime", "app_scope": env.scope.app_scope},
        "scope": {"app_scope": env.scope.app_scope, "conversation_id": env.scope.conversation_id},
    }
    call_id = env.correlation.call_id if env.correlation else None
    if env.type == "lineup.tool.invoke" and call_id:
        candidate = {
            **base,
            "type": "lineup.tool.error",
            "correlation": {"call_id": call_id, "reply_to": env.id},
            "payload": {"code": code, "message": detail[:500], "retryable": False},
        }
    else:
        candidate = {
            **base,
            "type": "lineup.message",
            "correlation": {"reply_to": env.id},
            "payload": {"text": f"{code}: {detail}"[:2000], "format": "plain"},
        }
    try:
        return validate_envelope(candidate).to_dict()
    except ContractError:
        return None


def user_envelope(action: dict[str, Any], *, user_id: str) -> dict[str, Any]:
    """The envelope of a declarative chat action (apps never build envelopes).

    `send_text` → `lineup.message` (with the conversation's `mode` and a spoken message's
    `audio` recording, when the action has them); `answer` → `lineup.interaction.response`.
    Raises `ContractError` (with its code) when the action does not make a valid envelope.
    """
    kind = action.get("action")
    common = {
        "v": 1,
        "id": action.get("id"),
        "timestamp": utc_timestamp(),
        "sender": {"kind": "user", "id": user_id},
        "target": {"kind": "runtime", "app_scope": "chat"},
        "scope": {"app_scope": "chat", "conversation_id": action.get("conversation_id")},
    }
    if kind == "send_text":
        payload = {"text": action.get("text"), "format": "plain"}
        # The conversation's mode when the user sent it, and a spoken message's recording.
        payload.update({key: action[key] for key in ("mode", "audio") if action.get(key)})
        envelope = {**common, "type": "lineup.message", "payload": payload}
    elif kind == "answer":
        envelope = {
            **common,
            "type": "lineup.interaction.response",
            "payload": action.get("response"),
        }
    else:
        raise ContractError(Code.INVALID_PAYLOAD, f"action: unknown action {kind!r}")
    if action.get("reply_to"):
        envelope["correlation"] = {"reply_to": action["reply_to"]}
    return validate_envelope(envelope).to_dict()
