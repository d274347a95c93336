"""RuntimeEnvelope v1 and `validate_envelope`, the first step of the filter chain.

Every message that crosses a boundary, is transported or is audited travels in this one
envelope, and every routable message carries `scope.app_scope` + `scope.conversation_id`.
`target` says who handles the message (`kind`: the runtime itself, or an app's inbox) and
for which app (`app_scope`); `scope` says which app, conversation, instance and operation
it belongs to. Outbound messages (to the agent, through the AppServer) are handled by the
runtime's transport, so their target kind is `runtime`.

`validate_envelope` checks in this order (size, depth, version, type, routing
keys, schema, coherence, sender, payload) and reports the first failure as one
`ContractError` with one `Code`. It never raises anything else, whatever the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import (
    Field,
    JsonValue,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from contracts import _ids
from contracts._catalog import MESSAGE_TYPES, EntryKind, MessageSpec, SenderKind, TargetKind
from contracts._codes import APP_TOOL_ERROR_CODES, Code, ContractError
from contracts._ids import (
    AppScope,
    CallId,
    ConversationId,
    InstanceId,
    InventoryRevision,
    MessageId,
    MessageType,
    OperationId,
    Timestamp,
)
from contracts._json import MAX_ENVELOPE_BYTES, decode_json, encode_json
from contracts._model import ContractModel, first_violation, rule

ENVELOPE_VERSION: Final = 1
MAX_SEQUENCE: Final = (1 << 53) - 1  # exact in every JSON implementation
_SENDER_ID_PATTERNS: Final = {
    "agent": _ids.compile_pattern(_ids.AGENT_ID_PATTERN),
    "runtime": _ids.compile_pattern(_ids.RUNTIME_ID_PATTERN),
    "user": _ids.compile_pattern(_ids.USER_ID_PATTERN),
    "host": _ids.compile_pattern(_ids.HOST_ID_PATTERN),
}


class Sender(ContractModel):
    """Who sent the message. An app's id is its app scope or one of its instance ids."""

    kind: SenderKind
    id: Annotated[str, StringConstraints(min_length=1, max_length=200)]

    @model_validator(mode="after")
    def _id_grammar(self) -> Sender:
        if self.kind == "app":
            ok = _ids.is_app_scope(self.id) or _ids.is_instance_id(self.id)
        else:
            ok = _SENDER_ID_PATTERNS[self.kind].fullmatch(self.id) is not None
        if not ok:
            raise rule("id", f"not a valid {self.kind} id")
        return self

    @property
    def app_scope(self) -> str | None:
        """For an app sender, the app it speaks for."""
        return _ids.instance_app_scope(self.id) if self.kind == "app" else None


class Target(ContractModel):
    kind: TargetKind
    app_scope: AppScope
    instance_id: InstanceId | None = None


class Scope(ContractModel):
    app_scope: AppScope
    conversation_id: ConversationId
    instance_id: InstanceId | None = None
    operation_id: OperationId | None = None


class Correlation(ContractModel):
    reply_to: MessageId | None = None
    call_id: CallId | None = None
    inventory_revision: InventoryRevision | None = None
    sequence: Annotated[int, Field(ge=0, le=MAX_SEQUENCE)] | None = None


class RuntimeEnvelope(ContractModel):
    """The one routed message shape. Optional fields are omitted when absent."""

    v: Annotated[int, Field(ge=1, le=1, json_schema_extra={"const": 1})]
    id: MessageId
    type: MessageType
    timestamp: Timestamp
    sender: Sender
    target: Target
    scope: Scope
    correlation: Correlation | None = None
    payload: JsonValue

    @field_validator("correlation", mode="before")
    @classmethod
    def _empty_is_absent(cls, value: object) -> object:
        # One canonical form, one model: `{}` and all-null correlations equal an absent one.
        fields = value.model_dump() if isinstance(value, Correlation) else value
        if isinstance(fields, Mapping) and all(item is None for item in fields.values()):
            return None
        return value

    @property
    def spec(self) -> MessageSpec:
        """The catalogue entry of this envelope's type.

        `validate_envelope` guarantees one; an envelope built with `model_validate` alone has
        only been checked for shape, so its type may be unknown.
        """
        spec = MESSAGE_TYPES.get(self.type)
        if spec is None:
            raise ContractError(Code.UNKNOWN_TYPE, f"type: {self.type!r} is not a known type")
        return spec

    @property
    def entry_kind(self) -> EntryKind | None:
        """Which of the three entry kinds this message is, if any."""
        return self.spec.entry

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form: absent optionals left out."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self) -> bytes:
        """The canonical encoding, as sent on the wire and measured by the size limit."""
        return encode_json(self.to_dict())


def _check_version_and_type(obj: Mapping[str, Any]) -> MessageSpec:
    if "v" not in obj:
        raise ContractError(Code.INVALID_ENVELOPE, "v: field required")
    version = obj["v"]
    if type(version) is not int:  # bool is an int subclass and is not a version
        raise ContractError(Code.INVALID_ENVELOPE, "v: must be an integer")
    if version != ENVELOPE_VERSION:
        raise ContractError(Code.UNSUPPORTED_VERSION, f"v: {version} is not supported; use 1")
    type_ = obj.get("type")
    if not isinstance(type_, str):
        raise ContractError(Code.INVALID_ENVELOPE, "type: must be a string")
    spec = MESSAGE_TYPES.get(type_)
    if spec is None:
        legacy = type_.startswith("lineup.v1.")
        hint = " (a legacy message: use the legacy adapter)" if legacy else ""
        raise ContractError(Code.UNKNOWN_TYPE, f"type: {type_[:128]!r} is not a known type{hint}")
    return spec


_ROUTING_CHECKS: Final = {
    "app_scope": _ids.is_app_scope,
    "conversation_id": _ids.is_conversation_id,
    "instance_id": _ids.is_instance_id,
    "operation_id": _ids.is_operation_id,
}


def _routing_key(container: Mapping[str, Any], where: str, key: str, required: bool) -> None:
    value = container.get(key)
    if value is None:
        if required:
            raise ContractError(Code.SCOPE_MISSING, f"{where}.{key}: required")
        return
    if not _ROUTING_CHECKS[key](value):
        raise ContractError(Code.SCOPE_INVALID, f"{where}.{key}: not a valid {key}")


def _check_routing_keys(obj: Mapping[str, Any]) -> None:
    # A routable message without a valid app_scope or conversation_id is refused.
    for where, keys in (
        ("scope", (("app_scope", True), ("conversation_id", True), ("instance_id", False),
                   ("operation_id", False))),
        ("target", (("app_scope", True), ("instance_id", False))),
    ):  # fmt: skip
        container = obj.get(where)
        if container is None:
            raise ContractError(Code.SCOPE_MISSING, f"{where}: required")
        if not isinstance(container, Mapping):
            raise ContractError(Code.SCOPE_INVALID, f"{where}: must be an object")
        for key, required in keys:
            _routing_key(container, where, key, required)


def _check_coherence(env: RuntimeEnvelope, spec: MessageSpec) -> None:
    target, scope = env.target, env.scope
    if target.app_scope != scope.app_scope:
        raise ContractError(Code.SCOPE_MISMATCH, "target.app_scope: differs from scope.app_scope")
    if target.kind == "app" and target.app_scope == _ids.SCOPE_RUNTIME:
        raise ContractError(Code.SCOPE_MISMATCH, "target.kind: the runtime scope is not an app")
    if target.kind not in spec.targets:
        raise ContractError(
            Code.SCOPE_MISMATCH, f"target.kind: {env.type} is not sent to a {target.kind}"
        )
    for where, instance in (("target", target.instance_id), ("scope", scope.instance_id)):
        if instance is not None and _ids.instance_app_scope(instance) != scope.app_scope:
            raise ContractError(Code.SCOPE_MISMATCH, f"{where}.instance_id: belongs to another app")
    if target.instance_id is not None and target.instance_id != scope.instance_id:
        raise ContractError(
            Code.SCOPE_MISMATCH, "target.instance_id: differs from scope.instance_id"
        )
    is_global = scope.conversation_id == _ids.RUNTIME_GLOBAL_CONVERSATION
    if is_global and scope.app_scope != _ids.SCOPE_RUNTIME:
        raise ContractError(
            Code.SCOPE_MISMATCH, "scope.conversation_id: runtime:global is the runtime's"
        )
    if spec.global_only and not is_global:
        raise ContractError(Code.SCOPE_MISMATCH, f"scope.conversation_id: {env.type} is global")
    if spec.needs_instance and scope.instance_id is None:
        raise ContractError(Code.SCOPE_MISSING, f"scope.instance_id: required by {env.type}")


def _check_sender(env: RuntimeEnvelope, spec: MessageSpec) -> None:
    # Each entry kind has its own sender kinds; e.g. a user can never send a tool call.
    if env.sender.kind not in spec.senders:
        raise ContractError(
            Code.SENDER_NOT_ALLOWED, f"sender.kind: {env.sender.kind!r} cannot send {env.type}"
        )
    if env.sender.app_scope is not None and env.sender.app_scope != env.scope.app_scope:
        raise ContractError(Code.SCOPE_MISMATCH, "sender.id: an app speaks only in its own scope")


def _check_correlation(env: RuntimeEnvelope, spec: MessageSpec) -> None:
    correlation = env.correlation or Correlation()
    if spec.needs_call_id and correlation.call_id is None:
        raise ContractError(
            Code.CORRELATION_MISSING, f"correlation.call_id: required by {env.type}"
        )
    if spec.needs_inventory_revision and correlation.inventory_revision is None:
        raise ContractError(
            Code.CORRELATION_MISSING, f"correlation.inventory_revision: required by {env.type}"
        )


def _check_payload(env: RuntimeEnvelope, spec: MessageSpec) -> None:
    try:
        payload = spec.payload.validate_python(env.payload)
    except ValidationError as exc:
        raise ContractError(Code.INVALID_PAYLOAD, first_violation(exc, prefix="payload")) from None
    if env.type == "lineup.inventory":
        revision = env.correlation.inventory_revision if env.correlation else None
        if payload.revision != revision:
            raise ContractError(
                Code.INVALID_PAYLOAD, "payload.revision: differs from the correlation"
            )
    if env.type == "lineup.message" and env.sender.kind != "user":
        # What the user's side says of a turn (its mode, its recording) is no one else's.
        for field in ("mode", "audio"):
            if getattr(payload, field) is not None:
                raise ContractError(Code.INVALID_PAYLOAD, f"payload.{field}: the user's only")
    app_error = env.type == "lineup.tool.error" and env.sender.kind == "app"
    if app_error and payload.code not in APP_TOOL_ERROR_CODES:
        # An app fails its own calls; the runtime's verdicts are not its to claim.
        raise ContractError(
            Code.INVALID_PAYLOAD, f"payload.code: not an app's to give ({payload.code})"
        )


def check_envelope_object(obj: object) -> RuntimeEnvelope:
    """Validates already-decoded, bounded JSON data (see `validate_envelope`)."""
    if not isinstance(obj, Mapping):
        raise ContractError(Code.INVALID_ENVELOPE, "an envelope is a JSON object")
    spec = _check_version_and_type(obj)
    _check_routing_keys(obj)
    try:
        env = RuntimeEnvelope.model_validate(obj)
    except ValidationError as exc:
        raise ContractError(Code.INVALID_ENVELOPE, first_violation(exc)) from None
    _check_coherence(env, spec)
    _check_sender(env, spec)
    _check_correlation(env, spec)
    _check_payload(env, spec)
    return env


def validate_envelope(
    raw: bytes | bytearray | memoryview | str | Mapping[str, Any],
) -> RuntimeEnvelope:
    """The validated envelope, or `ContractError` with the first failing check's code.

    Accepts JSON text or bytes (from outside) or an already-parsed mapping (from inside);
    both are held to the same size (`MAX_ENVELOPE_BYTES`) and depth limits.
    """
    return check_envelope_object(decode_json(raw, max_bytes=MAX_ENVELOPE_BYTES))


def parse_payload(env: RuntimeEnvelope) -> Any:
    """The envelope's payload as its typed model (see `MESSAGE_TYPES[env.type].payload`)."""
    return env.spec.payload.validate_python(env.payload)
