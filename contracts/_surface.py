"""An installed app's surface: what its manifest declares, and the bridge messages it sends.

A surface is an HTML file of the app's signed bundle (a path under `app/`), declared on an
entrypoint with the events it may emit, each with a JSON Schema for its payload. A host
shows it in a sandboxed frame, and the frame's only door is the surface bridge: JSON text
posted to the host page, checked by the page and again by the web host before anything
becomes a message to an actor (docs/protocol.md, "The surface bridge").

A payload schema keeps to the keywords both checkers implement the same way (the page's
script and `jsonschema` here): no regular expressions, whose dialects differ, and no
references. `check_bridge_text` is the web host's check of one message, in the order the
page checks it, each refusal a `ContractError` with its code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import AfterValidator, Field, JsonValue, StringConstraints, ValidationError

from contracts._codes import APP_TOOL_ERROR_CODES, Code, ContractError
from contracts._ids import CallId, CapabilityName, InstanceId
from contracts._model import (
    ContractModel,
    JsonObject,
    Label,
    Text,
    first_violation,
    rule,
)
from contracts._payloads import Percent
from contracts._schema_check import SchemaTooCostly, first_error
from contracts._tools import ToolSchema

BRIDGE_VERSION: Final = 1
# Bytes of one bridge message as UTF-8 JSON text: what the page and the web host take.
MAX_BRIDGE_BYTES: Final = 64 * 1024
# The JSON Schema keywords a surface event's payload schema may use.
SCHEMA_KEYWORDS: Final = frozenset(
    {
        "$schema",
        "title",
        "description",
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "maxProperties",
    }
)

# A path inside the bundle's `app/` directory: plain segments (none empty, none starting
# with a dot, so no `.` or `..` and no dotfile), ending in `.html`.
SurfacePath = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*\.html$",
        max_length=200,
    ),
]
EventName = Annotated[
    str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$", max_length=64)
]
RequestId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


def _keyword_outside_subset(schema: Any, where: str) -> str | None:
    """Where the first keyword outside `SCHEMA_KEYWORDS` is, or None."""
    if not isinstance(schema, Mapping):
        return None
    for key, value in schema.items():
        here = f"{where}.{key}" if where else str(key)
        if key not in SCHEMA_KEYWORDS:
            return here
        if key == "properties" and isinstance(value, Mapping):
            for name, sub in value.items():
                found = _keyword_outside_subset(sub, f"{here}.{name}")
                if found:
                    return found
        elif key in ("items", "additionalProperties"):
            found = _keyword_outside_subset(value, here)
            if found:
                return found
    return None


def _shared_keywords(schema: JsonObject) -> JsonObject:
    where = _keyword_outside_subset(schema, "")
    if where is not None:
        raise rule(where, "a surface event's schema keeps to the keywords the page checks too")
    return schema


PayloadSchema = Annotated[ToolSchema, AfterValidator(_shared_keywords)]


class SurfaceEvent(ContractModel):
    """An event a surface may emit, and the schema its payload is held to."""

    name: EventName
    payload_schema: PayloadSchema


# How a surface may be shown, as agents and hosts know them: in the conversation's timeline,
# on the stage beside the chat, over the whole window, or small and afloat while another app
# is in front. The host decides which one is in force, among those an entrypoint declares.
DisplayMode = Literal["inline", "stage", "fullscreen", "pip"]
DEFAULT_DISPLAY_MODES: Final = ("stage",)


def check_surface(
    entrypoint_id: str,
    surface: str | None,
    events: list[SurfaceEvent],
    modes: list[str] | None = None,
) -> None:
    """The entrypoint's surface fields agree: events and display modes only with a surface,
    none twice."""
    if events and surface is None:
        raise rule("surface_events", f"entrypoint {entrypoint_id!r} has no surface to emit them")
    names = [event.name for event in events]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        raise rule("surface_events", f"{twice!r} is declared twice")
    if modes is not None and surface is None:
        raise rule("display_modes", f"entrypoint {entrypoint_id!r} has no surface to show")
    twice = next((mode for mode in modes or [] if (modes or []).count(mode) > 1), None)
    if twice is not None:
        raise rule("display_modes", f"{twice!r} is declared twice")


def check_event_payload(event: SurfaceEvent, payload: object) -> None:
    """Raises `ContractError(invalid_payload)` unless `payload` fits the event's schema."""
    try:
        error = first_error(event.payload_schema, payload, best=False)
    except SchemaTooCostly:
        raise ContractError(
            Code.INVALID_PAYLOAD, f"payload of {event.name!r} costs too much to check; send less"
        ) from None
    if error is not None:
        pointer = "".join(f"/{part}" for part in error.absolute_path)
        raise ContractError(
            Code.INVALID_PAYLOAD, f"payload of {event.name!r} at {pointer!r}: {error.message}"
        )


# --- bridge messages from a surface -------------------------------------------------------


class _Bridge(ContractModel):
    v: Literal[1]
    id: RequestId
    instance_id: InstanceId


class Ready(_Bridge):
    type: Literal["ready"]


class Emit(_Bridge):
    type: Literal["event"]
    name: EventName
    payload: JsonObject


class SessionGet(_Bridge):
    type: Literal["session.get"]


class SessionSubscribe(_Bridge):
    type: Literal["session.subscribe"]


class SessionReplace(_Bridge):
    type: Literal["session.replace"]
    data: JsonObject
    expected_revision: Annotated[int, Field(ge=0)]


class CapabilityAsk(_Bridge):
    type: Literal["capability"]
    capability: CapabilityName
    purpose: Label
    input: JsonValue = None


class SurfaceToolResult(_Bridge):
    """The surface's answer to a tool call handed to it: the output, held to the tool's
    output schema by the tool router."""

    type: Literal["tool.result"]
    call_id: CallId
    output: JsonObject


# The codes an app may end a call with (`APP_TOOL_ERROR_CODES`, held equal below).
AppToolErrorCode = Literal[
    "cancelled_by_user",
    "permission_denied",
    "invalid_arguments",
    "foreground_required",
    "operation_expired",
    "handler_failed",
]
assert set(get_args(AppToolErrorCode)) == {code.value for code in APP_TOOL_ERROR_CODES}


class SurfaceToolError(_Bridge):
    """The surface ends a call handed to it with a code an app may end a call with."""

    type: Literal["tool.error"]
    call_id: CallId
    code: AppToolErrorCode
    message: Text | None = None


class SurfaceToolProgress(_Bridge):
    """Progress on a call handed to the surface, as an app reports it."""

    type: Literal["tool.progress"]
    call_id: CallId
    stage: Label | None = None
    percent: Percent | None = None
    message: Text | None = None


SurfaceToolAnswer = SurfaceToolResult | SurfaceToolError | SurfaceToolProgress
BridgeMessage = (
    Ready
    | Emit
    | SessionGet
    | SessionSubscribe
    | SessionReplace
    | CapabilityAsk
    | SurfaceToolAnswer
)
_MODELS: Final[dict[str, type[_Bridge]]] = {
    "ready": Ready,
    "event": Emit,
    "session.get": SessionGet,
    "session.subscribe": SessionSubscribe,
    "session.replace": SessionReplace,
    "capability": CapabilityAsk,
    "tool.result": SurfaceToolResult,
    "tool.error": SurfaceToolError,
    "tool.progress": SurfaceToolProgress,
}


def check_bridge_text(
    text: str,
    *,
    instance_id: str,
    events: Mapping[str, SurfaceEvent],
    capabilities: frozenset[str],
    calls: frozenset[str] = frozenset(),
) -> BridgeMessage:
    """One message from the surface showing `instance_id`, checked in this order: its size
    (`too_large`), JSON text of an object (`invalid_json`), a bridge type (`unknown_type`),
    its fields (`invalid_payload`), the instance (`scope_mismatch`), a declared event
    (`unknown_type`) and its payload's schema (`invalid_payload`), a declared capability
    (`permission_denied`), a tool call handed to this instance's surfaces and not ended
    (`calls`; `ownership_mismatch`)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BRIDGE_BYTES:
        raise ContractError(Code.TOO_LARGE, f"{size} bytes, over {MAX_BRIDGE_BYTES}")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise ContractError(Code.INVALID_JSON, "not JSON text") from None
    if not isinstance(value, dict):
        raise ContractError(Code.INVALID_JSON, "not a JSON object")
    model = _MODELS.get(value.get("type"))  # type: ignore[arg-type]
    if model is None:
        raise ContractError(Code.UNKNOWN_TYPE, f"type {str(value.get('type'))[:64]!r}")
    try:
        message: BridgeMessage = model.model_validate(value)  # type: ignore[assignment]
    except ValidationError as exc:
        raise ContractError(Code.INVALID_PAYLOAD, first_violation(exc)) from None
    if message.instance_id != instance_id:
        raise ContractError(Code.SCOPE_MISMATCH, "instance_id: not the instance shown here")
    if isinstance(message, Emit):
        event = events.get(message.name)
        if event is None:
            raise ContractError(Code.UNKNOWN_TYPE, f"event {message.name!r} is not declared")
        check_event_payload(event, message.payload)
    if isinstance(message, CapabilityAsk) and message.capability not in capabilities:
        raise ContractError(
            Code.PERMISSION_DENIED, f"capability {message.capability!r} is not declared"
        )
    if isinstance(message, SurfaceToolAnswer) and message.call_id not in calls:
        raise ContractError(
            Code.OWNERSHIP_MISMATCH, f"{message.call_id} is not an open call of this surface"
        )
    return message
