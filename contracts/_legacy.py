"""The compatibility adapter between legacy `lineup.v1.*` messages and RuntimeEnvelope.

The current AppServer and agent still speak `lineup.v1.*`: no `app_scope`, a conversation
that is sometimes implied by the session, and surface payloads that name their app with an
old vendor-style `app.id`. Only this adapter reads those fields; apps only ever see the
canonical envelope it produces.

The rules:
- conversation, message, task and interaction types map to the `chat` scope of the
  current conversation (`LegacyContext.conversation_id` when the message names none);
- surface and tool types map `payload.app.id` through `LEGACY_APP_IDS`, exactly: an id
  outside the table is refused (`scope_invalid`), never guessed from its spelling;
- an explicit top-level `app_scope` must be well formed (`scope_invalid`) and equal to the
  mapped scope (`scope_mismatch`);
- the result is then validated like any canonical envelope.

`to_legacy` is the exact inverse: it refuses (`legacy_unmappable`) any envelope whose
legacy form would not map back to the same envelope, so nothing is lost silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import Field, StringConstraints, ValidationError

from contracts import _ids
from contracts._codes import Code, ContractError
from contracts._envelope import RuntimeEnvelope, check_envelope_object
from contracts._ids import CallId, ConversationId, InventoryRevision, MessageId, Timestamp
from contracts._json import MAX_ENVELOPE_BYTES, decode_json
from contracts._model import ContractModel, JsonObject, Text, first_violation
from contracts._tools import CodeField

LEGACY_PREFIX: Final = "lineup.v1."
# The old vendor-style app ids of the M0-M4 apps and the local scope each one maps to.
LEGACY_APP_IDS: Final = {
    "lineup.chat": _ids.SCOPE_CHAT,
    "lineup.voice": _ids.SCOPE_VOICE,
    "lineup.whiteboard": _ids.SCOPE_WHITEBOARD,
    "lineup.draw-and-guess": _ids.SCOPE_DRAW_AND_GUESS,
}
_LEGACY_APP_BY_SCOPE: Final = {scope: app_id for app_id, scope in LEGACY_APP_IDS.items()}
# Legacy type → canonical type. `tool.result` maps to `tool.result` or `tool.error`.
LEGACY_TYPES: Final = {
    "lineup.v1.message": "lineup.message",
    "lineup.v1.task.progress": "lineup.task.progress",
    "lineup.v1.interaction.request": "lineup.interaction.request",
    "lineup.v1.interaction.response": "lineup.interaction.response",
    "lineup.v1.surface.open": "lineup.surface.open",
    "lineup.v1.surface.update": "lineup.app.state.patch",
    "lineup.v1.surface.close": "lineup.surface.close",
    "lineup.v1.tool.call": "lineup.tool.invoke",
    "lineup.v1.tool.result": "lineup.tool.result",
}
_CANONICAL_TO_LEGACY: Final = {
    **{canonical: legacy for legacy, canonical in LEGACY_TYPES.items()},
    "lineup.tool.error": "lineup.v1.tool.result",
}
# These keep their payload unchanged; the others carry `app.id` and are reshaped.
_CHAT_TYPES: Final = frozenset(
    {
        "lineup.v1.message",
        "lineup.v1.task.progress",
        "lineup.v1.interaction.request",
        "lineup.v1.interaction.response",
    }
)
LegacyType = Literal[
    "lineup.v1.message",
    "lineup.v1.task.progress",
    "lineup.v1.interaction.request",
    "lineup.v1.interaction.response",
    "lineup.v1.surface.open",
    "lineup.v1.surface.update",
    "lineup.v1.surface.close",
    "lineup.v1.tool.call",
    "lineup.v1.tool.result",
]
_ROLE_TO_KIND: Final = {"agent": "agent", "user": "user", "system": "runtime"}
_KIND_TO_ROLE: Final = {kind: role for role, kind in _ROLE_TO_KIND.items()}
SurfaceId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]


@dataclass(frozen=True, slots=True)
class LegacyContext:
    """What the adapter knows that a legacy message may leave out: the current conversation."""

    conversation_id: str | None = None


class LegacyFrom(ContractModel):
    role: Literal["agent", "user", "system"]
    id: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class LegacyMessage(ContractModel):
    """The outer shape of every `lineup.v1.*` message."""

    type: LegacyType
    id: MessageId
    ts: Timestamp
    conversation_id: ConversationId | None = None
    app_scope: str | None = None  # explicit scope; checked by the adapter
    from_: LegacyFrom = Field(alias="from")
    reply_to: MessageId | None = None
    seq: Annotated[int, Field(ge=0, le=(1 << 53) - 1)] | None = None
    payload: JsonObject


class LegacyApp(ContractModel):
    id: Annotated[str, StringConstraints(min_length=1, max_length=128)]


class LegacySurfaceOpen(ContractModel):
    app: LegacyApp
    surface_id: SurfaceId
    entrypoint: str
    state: JsonObject = Field(default_factory=dict)


class LegacySurfaceUpdate(ContractModel):
    app: LegacyApp
    surface_id: SurfaceId
    patch: JsonObject
    base_revision: int | None = None


class LegacySurfaceClose(ContractModel):
    app: LegacyApp
    surface_id: SurfaceId
    reason: str | None = None


class LegacyToolCall(ContractModel):
    app: LegacyApp
    call_id: CallId
    method: str
    arguments: JsonObject
    inventory_revision: InventoryRevision


class LegacyToolFailure(ContractModel):
    code: CodeField
    message: Text | None = None


class LegacyToolResult(ContractModel):
    app: LegacyApp
    call_id: CallId
    ok: bool
    result: JsonObject | None = None
    error: LegacyToolFailure | None = None


LEGACY_PAYLOADS: Final[dict[str, type[ContractModel]]] = {
    "lineup.v1.surface.open": LegacySurfaceOpen,
    "lineup.v1.surface.update": LegacySurfaceUpdate,
    "lineup.v1.surface.close": LegacySurfaceClose,
    "lineup.v1.tool.call": LegacyToolCall,
    "lineup.v1.tool.result": LegacyToolResult,
}


def _precheck(obj: Mapping[str, Any]) -> str:
    type_ = obj.get("type")
    if not isinstance(type_, str):
        raise ContractError(Code.INVALID_ENVELOPE, "type: must be a string")
    if type_ not in LEGACY_TYPES:
        raise ContractError(Code.UNKNOWN_TYPE, f"type: {type_[:128]!r} is not a legacy type")
    conversation = obj.get("conversation_id")
    if conversation is not None and not _ids.is_conversation_id(conversation):
        raise ContractError(Code.SCOPE_INVALID, "conversation_id: not a valid conversation_id")
    explicit = obj.get("app_scope")
    if explicit is not None and not _ids.is_app_scope(explicit):
        raise ContractError(Code.SCOPE_INVALID, "app_scope: not a valid app_scope")
    return type_


def _mapped_scope(legacy_app: object) -> str:
    if not isinstance(legacy_app, Mapping) or legacy_app.get("id") is None:
        raise ContractError(Code.SCOPE_MISSING, "payload.app.id: required")
    app_id = legacy_app["id"]
    scope = LEGACY_APP_IDS.get(app_id) if isinstance(app_id, str) else None
    if scope is None:
        raise ContractError(
            Code.SCOPE_INVALID, f"payload.app.id: {str(app_id)[:128]!r} has no mapping"
        )
    return scope


def _mapped_instance(scope: str, surface_id: object) -> str | None:
    if surface_id is None:
        return None
    instance = f"{scope}:{surface_id}" if isinstance(surface_id, str) else ""
    if not _ids.is_instance_id(instance):
        raise ContractError(Code.SCOPE_INVALID, "payload.surface_id: not a valid instance id part")
    return instance


def _canonical_payload(type_: str, payload: JsonObject) -> tuple[str, JsonObject, JsonObject]:
    """(canonical type, canonical payload, correlation fields) for a surface or tool message."""
    try:
        model = LEGACY_PAYLOADS[type_].model_validate(payload)
    except ValidationError as exc:
        raise ContractError(Code.INVALID_PAYLOAD, first_violation(exc, prefix="payload")) from None
    data = model.model_dump(mode="json", exclude_none=True, exclude={"app", "surface_id"})
    if isinstance(model, LegacyToolCall):
        data = {"method": model.method, "contract_version": "1", "arguments": model.arguments}
        correlation: JsonObject = {
            "call_id": model.call_id,
            "inventory_revision": model.inventory_revision,
        }
        return "lineup.tool.invoke", data, correlation
    if isinstance(model, LegacyToolResult):
        correlation = {"call_id": model.call_id}
        if model.ok and model.result is not None and model.error is None:
            return "lineup.tool.result", {"output": model.result}, correlation
        if not model.ok and model.error is not None and model.result is None:
            error = model.error.model_dump(mode="json", exclude_none=True)
            return "lineup.tool.error", error, correlation
        raise ContractError(
            Code.INVALID_PAYLOAD, "payload.ok: needs `result` when true, `error` when false"
        )
    return LEGACY_TYPES[type_], data, {}


def _from_legacy_object(obj: object, context: LegacyContext) -> RuntimeEnvelope:
    if not isinstance(obj, Mapping):
        raise ContractError(Code.INVALID_ENVELOPE, "a legacy message is a JSON object")
    type_ = _precheck(obj)
    try:
        msg = LegacyMessage.model_validate(obj)
    except ValidationError as exc:
        raise ContractError(Code.INVALID_ENVELOPE, first_violation(exc)) from None
    conversation = msg.conversation_id or context.conversation_id
    if conversation is None:
        raise ContractError(Code.SCOPE_MISSING, "conversation_id: none given and no current one")
    instance: str | None = None
    correlation: JsonObject = {}
    if type_ in _CHAT_TYPES:
        scope, canonical_type, payload = _ids.SCOPE_CHAT, LEGACY_TYPES[type_], msg.payload
    else:
        scope = _mapped_scope(msg.payload.get("app"))
        instance = _mapped_instance(scope, msg.payload.get("surface_id"))
        canonical_type, payload, correlation = _canonical_payload(type_, msg.payload)
    if msg.app_scope is not None and msg.app_scope != scope:
        raise ContractError(
            Code.SCOPE_MISMATCH, f"app_scope: {msg.app_scope!r} but {type_} maps to {scope!r}"
        )
    outbound = msg.from_.role == "user" or type_.startswith("lineup.v1.tool.")
    target: JsonObject = {"kind": "runtime" if outbound else "app", "app_scope": scope}
    scope_obj: JsonObject = {"app_scope": scope, "conversation_id": conversation}
    if instance is not None:
        target["instance_id"] = scope_obj["instance_id"] = instance
    if msg.reply_to is not None:
        correlation["reply_to"] = msg.reply_to
    if msg.seq is not None:
        correlation["sequence"] = msg.seq
    canonical: JsonObject = {
        "v": 1,
        "id": msg.id,
        "type": canonical_type,
        "timestamp": msg.ts,
        "sender": {"kind": _ROLE_TO_KIND[msg.from_.role], "id": msg.from_.id},
        "target": target,
        "scope": scope_obj,
        "correlation": correlation,
        "payload": payload,
    }
    return check_envelope_object(canonical)


def from_legacy(
    msg: bytes | bytearray | memoryview | str | Mapping[str, Any], *, context: LegacyContext
) -> RuntimeEnvelope:
    """The canonical envelope for a legacy `lineup.v1.*` message, or `ContractError`."""
    return _from_legacy_object(decode_json(msg, max_bytes=MAX_ENVELOPE_BYTES), context)


def _legacy_payload(env: RuntimeEnvelope, legacy_type: str) -> JsonObject:
    if legacy_type in _CHAT_TYPES:
        return dict(env.payload) if isinstance(env.payload, dict) else {}
    app_id = _LEGACY_APP_BY_SCOPE.get(env.scope.app_scope)
    if app_id is None:
        raise ContractError(
            Code.LEGACY_UNMAPPABLE, f"scope.app_scope: {env.scope.app_scope!r} has no legacy app.id"
        )
    payload: JsonObject = {"app": {"id": app_id}}
    if env.scope.instance_id is not None:
        payload["surface_id"] = env.scope.instance_id.partition(":")[2]
    correlation = env.correlation
    body = dict(env.payload) if isinstance(env.payload, dict) else {}
    if env.type == "lineup.tool.invoke":
        payload["call_id"] = correlation.call_id if correlation else None
        payload["method"] = body.get("method")
        payload["arguments"] = body.get("arguments")
        payload["inventory_revision"] = correlation.inventory_revision if correlation else None
    elif env.type in {"lineup.tool.result", "lineup.tool.error"}:
        payload["call_id"] = correlation.call_id if correlation else None
        payload["ok"] = env.type == "lineup.tool.result"
        if env.type == "lineup.tool.result":
            payload["result"] = body.get("output")
        else:
            payload["error"] = body
    else:
        payload.update(body)
    return payload


def to_legacy(env: RuntimeEnvelope) -> dict[str, Any]:
    """The legacy form of `env`, or `ContractError(legacy_unmappable)` if it has none.

    The result is checked by mapping it back: only an exact round trip is returned.
    """
    legacy_type = _CANONICAL_TO_LEGACY.get(env.type)
    if legacy_type is None:
        raise ContractError(Code.LEGACY_UNMAPPABLE, f"type: {env.type} has no legacy form")
    role = _KIND_TO_ROLE.get(env.sender.kind)
    if role is None:
        raise ContractError(
            Code.LEGACY_UNMAPPABLE, f"sender.kind: a {env.sender.kind} has no legacy role"
        )
    legacy: dict[str, Any] = {
        "type": legacy_type,
        "id": env.id,
        "ts": env.timestamp,
        "conversation_id": env.scope.conversation_id,
        "from": {"role": role, "id": env.sender.id},
    }
    if env.correlation is not None and env.correlation.reply_to is not None:
        legacy["reply_to"] = env.correlation.reply_to
    if env.correlation is not None and env.correlation.sequence is not None:
        legacy["seq"] = env.correlation.sequence
    legacy["payload"] = _legacy_payload(env, legacy_type)
    try:
        back = _from_legacy_object(legacy, LegacyContext()).to_dict()
    except ContractError as exc:
        raise ContractError(Code.LEGACY_UNMAPPABLE, f"no legacy form: {exc.detail}") from None
    expected = env.to_dict()
    if back != expected:
        field = next(key for key in expected if back.get(key) != expected.get(key))
        raise ContractError(Code.LEGACY_UNMAPPABLE, f"{field}: not expressible in lineup.v1")
    return legacy


def validate_message(
    raw: bytes | bytearray | memoryview | str | Mapping[str, Any],
    *,
    legacy_context: LegacyContext | None = None,
) -> RuntimeEnvelope:
    """Validates one inbound message, canonical or legacy, into a canonical envelope.

    Legacy messages are recognised by their `lineup.v1.` type prefix and go through the
    adapter; everything else must be a RuntimeEnvelope.
    """
    obj = decode_json(raw, max_bytes=MAX_ENVELOPE_BYTES)
    type_ = obj.get("type") if isinstance(obj, Mapping) else None
    if isinstance(type_, str) and type_.startswith(LEGACY_PREFIX):
        return _from_legacy_object(obj, legacy_context or LegacyContext())
    return check_envelope_object(obj)
