"""Grammars for every identifier that crosses a boundary, and the message-id generator.

Every id kind has one regular expression, used three ways: by the pydantic models (as a
``pattern`` constraint), by the exported JSON Schemas (the same string), and by the
hand-written pre-checks that must name a definite rejection code before the model runs
(the filter chain's first step). The patterns avoid look-arounds so that they mean the same thing in
Python, in pydantic's Rust engine and in ECMA-262, the dialect JSON Schema patterns use.

Message ids are ULIDs (26 characters of Crockford base32, 48-bit millisecond time + 80 random
bits) so that primary keys are time-ordered: the store and the durable mailbox insert them
in nearly ascending order, which is markedly faster than random keys.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from datetime import UTC, datetime
from typing import Annotated, Final

from pydantic import AfterValidator, StringConstraints

# --- app scopes --------------------------------------------------------------------------
# Local, short, lowercase: a scope is a key for launch, routing, tool routing, storage
# isolation and instance ownership on this machine, not a vendor identity.
APP_SCOPE_PATTERN: Final = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"
APP_SCOPE_MAX_LENGTH: Final = 64

SCOPE_CHAT: Final = "chat"
SCOPE_APP_REGISTRY: Final = "app-registry"
SCOPE_SETTINGS: Final = "settings"
SCOPE_VOICE: Final = "voice"  # the legacy adapter maps old app ids to these
SCOPE_WHITEBOARD: Final = "whiteboard"
SCOPE_DRAW_AND_GUESS: Final = "draw-and-guess"
SCOPE_RUNTIME: Final = "runtime"
# Core apps ship with the runtime and cannot be overridden by a bundle: the scopes of the
# apps `actors.runtime_children.CORE_APPS` declares (a test holds the two together; the
# contracts import nothing of the runtime, and a bundle is checked without it).
CORE_APP_SCOPES: Final = frozenset({SCOPE_CHAT, SCOPE_APP_REGISTRY, SCOPE_SETTINGS})

# --- conversations -----------------------------------------------------------------------
# Conversation ids are opaque tokens assigned by the AppServer. The colon is reserved for
# conversations the runtime owns; `runtime:global` (global runtime events) is the only one.
RUNTIME_GLOBAL_CONVERSATION: Final = "runtime:global"
CONVERSATION_ID_PATTERN: Final = r"^(runtime:global|[A-Za-z0-9][A-Za-z0-9._-]{0,127})$"

# --- message ids -------------------------------------------------------------------------
CROCKFORD_ALPHABET: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# 26 characters; the first is at most 7 because a ULID is 128 bits.
MESSAGE_ID_PATTERN: Final = r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$"

# --- the other ids -----------------------------------------------------------------------
# An instance belongs to exactly one app: its id is `<app_scope>:<local>`, as in
# `draw-and-guess:game-001`. The prefix lets every hop check ownership without a lookup.
INSTANCE_ID_PATTERN: Final = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*:[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
OPERATION_ID_PATTERN: Final = r"^op_[A-Za-z0-9_-]{1,64}$"
CALL_ID_PATTERN: Final = r"^call_[A-Za-z0-9_-]{1,64}$"
# Inventory revisions are decimal positive integers, so "stale" is a plain comparison.
INVENTORY_REVISION_PATTERN: Final = r"^[1-9][0-9]{0,15}$"
AGENT_ID_PATTERN: Final = r"^[a-z0-9][a-z0-9._-]{0,63}$"
USER_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
HOST_ID_PATTERN: Final = r"^[a-z][a-z0-9-]{0,31}$"
# `runtime` or `runtime:<actor>`, e.g. `runtime:tool_router`.
RUNTIME_ID_PATTERN: Final = r"^runtime(:[a-z][a-z0-9_]{0,63})?$"
DEVICE_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
TASK_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
INTERACTION_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
IDEMPOTENCY_KEY_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
# Message types: `lineup.<area>.<name>`; legacy ones are `lineup.v1.<area>.<name>`.
MESSAGE_TYPE_PATTERN: Final = r"^lineup(\.[a-z][a-z0-9_]*)+$"
TOOL_METHOD_PATTERN: Final = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$"
TOOL_METHOD_MAX_LENGTH: Final = 64
CAPABILITY_PATTERN: Final = r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$"
SDK_FEATURE_PATTERN: Final = r"^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*\.v[1-9][0-9]*$"
ENTRYPOINT_ID_PATTERN: Final = r"^[a-z][a-z0-9]*([_-][a-z0-9]+)*$"
# RFC 3339 in UTC with a `Z`, at most microsecond precision.
TIMESTAMP_PATTERN: Final = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$"
)
# Semantic Versioning 2.0.0 (the official regex, without named groups).
SEMVER_PATTERN: Final = (
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$"
)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The pattern for `fullmatch` use."""
    # `fullmatch` and no `$`-before-newline surprise: Python's `$` would accept "chat\n".
    return re.compile(pattern.removeprefix("^").removesuffix("$"))


_APP_SCOPE_RE: Final = compile_pattern(APP_SCOPE_PATTERN)
_CONVERSATION_RE: Final = compile_pattern(CONVERSATION_ID_PATTERN)
_INSTANCE_RE: Final = compile_pattern(INSTANCE_ID_PATTERN)
_OPERATION_RE: Final = compile_pattern(OPERATION_ID_PATTERN)
_MESSAGE_ID_RE: Final = compile_pattern(MESSAGE_ID_PATTERN)
_TOOL_METHOD_RE: Final = compile_pattern(TOOL_METHOD_PATTERN)


def is_app_scope(value: object) -> bool:
    """True for a well-formed app scope (grammar and length)."""
    return (
        isinstance(value, str)
        and len(value) <= APP_SCOPE_MAX_LENGTH
        and _APP_SCOPE_RE.fullmatch(value) is not None
    )


def is_tool_method(value: object) -> bool:
    """True for a well-formed tool method (grammar and length)."""
    return (
        isinstance(value, str)
        and len(value) <= TOOL_METHOD_MAX_LENGTH
        and _TOOL_METHOD_RE.fullmatch(value) is not None
    )


def is_conversation_id(value: object) -> bool:
    """True for a well-formed conversation id."""
    return isinstance(value, str) and _CONVERSATION_RE.fullmatch(value) is not None


def is_instance_id(value: object) -> bool:
    """True for a well-formed instance id whose app part is itself a valid scope."""
    return (
        isinstance(value, str)
        and _INSTANCE_RE.fullmatch(value) is not None
        and len(value.partition(":")[0]) <= APP_SCOPE_MAX_LENGTH
    )


def is_operation_id(value: object) -> bool:
    """True for a well-formed operation id."""
    return isinstance(value, str) and _OPERATION_RE.fullmatch(value) is not None


def instance_app_scope(instance_id: str) -> str:
    """The app scope an instance id belongs to (its prefix)."""
    return instance_id.partition(":")[0]


def _check_timestamp(value: str) -> str:
    # The pattern fixes the shape; this rejects impossible dates such as month 13.
    # The trailing `Z` already fixed the zone; the constructor is ~5x cheaper than strptime.
    datetime(
        int(value[0:4]), int(value[5:7]), int(value[8:10]),
        int(value[11:13]), int(value[14:16]), int(value[17:19]),
    )  # fmt: skip
    return value


def _id(pattern: str, max_length: int = 200) -> StringConstraints:
    return StringConstraints(pattern=pattern, max_length=max_length)


AppScope = Annotated[str, _id(APP_SCOPE_PATTERN, APP_SCOPE_MAX_LENGTH)]
ConversationId = Annotated[str, _id(CONVERSATION_ID_PATTERN)]
MessageId = Annotated[str, _id(MESSAGE_ID_PATTERN)]
InstanceId = Annotated[str, _id(INSTANCE_ID_PATTERN)]
OperationId = Annotated[str, _id(OPERATION_ID_PATTERN)]
CallId = Annotated[str, _id(CALL_ID_PATTERN)]
InventoryRevision = Annotated[str, _id(INVENTORY_REVISION_PATTERN)]
AgentId = Annotated[str, _id(AGENT_ID_PATTERN)]
UserId = Annotated[str, _id(USER_ID_PATTERN)]
HostId = Annotated[str, _id(HOST_ID_PATTERN)]
DeviceId = Annotated[str, _id(DEVICE_ID_PATTERN)]
TaskId = Annotated[str, _id(TASK_ID_PATTERN)]
InteractionId = Annotated[str, _id(INTERACTION_ID_PATTERN)]
IdempotencyKey = Annotated[str, _id(IDEMPOTENCY_KEY_PATTERN)]
MessageType = Annotated[str, _id(MESSAGE_TYPE_PATTERN, 128)]
ToolMethod = Annotated[str, _id(TOOL_METHOD_PATTERN, TOOL_METHOD_MAX_LENGTH)]
CapabilityName = Annotated[str, _id(CAPABILITY_PATTERN, 64)]
SdkFeature = Annotated[str, _id(SDK_FEATURE_PATTERN, 64)]
EntrypointId = Annotated[str, _id(ENTRYPOINT_ID_PATTERN, 64)]
SemVer = Annotated[str, _id(SEMVER_PATTERN, 128)]
Timestamp = Annotated[str, _id(TIMESTAMP_PATTERN, 40), AfterValidator(_check_timestamp)]


def utc_timestamp(moment: datetime | None = None) -> str:
    """An envelope timestamp: RFC 3339, UTC, millisecond precision, `Z` suffix."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _encode_base32(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(CROCKFORD_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


class MessageIdFactory:
    """Makes ULIDs that are strictly increasing even within one millisecond.

    Unlike a bare ULID function, two ids minted in the same millisecond by one factory keep
    their creation order (the random part is incremented), so a sender's messages sort in the
    order it emitted them. Thread-safe; each process normally uses the module's default
    factory through `new_message_id`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0

    def new(self, *, now_ms: int | None = None) -> str:
        """A fresh message id for time `now_ms` (milliseconds since the epoch, default: now)."""
        ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        if not 0 <= ms < 1 << 48:
            raise ValueError("`now_ms` must fit in 48 bits")
        with self._lock:
            if ms <= self._last_ms:
                # Same (or earlier) millisecond: continue the previous sequence.
                ms = self._last_ms
                rand = self._last_random + 1
                if rand >= 1 << 80:
                    ms += 1
                    rand = secrets.randbits(79)
            else:
                rand = secrets.randbits(79)  # top bit clear leaves room to increment
            self._last_ms, self._last_random = ms, rand
        return _encode_base32(ms, 10) + _encode_base32(rand, 16)


_DEFAULT_FACTORY: Final = MessageIdFactory()


def new_message_id(*, now_ms: int | None = None) -> str:
    """A fresh, time-ordered message id (ULID) from the process-wide factory."""
    return _DEFAULT_FACTORY.new(now_ms=now_ms)


def derive_message_id(parent_id: str, index: int) -> str:
    """The id of the `index`-th message emitted while handling message `parent_id`.

    Deterministic, so a replayed handler re-emits the same ids and the mailbox drops the
    duplicates (effectively-once processing); it keeps the parent's millisecond so derived
    messages sort next to their cause.
    """
    if not 0 <= index < 1 << 32:
        raise ValueError("`index` must be a non-negative 32-bit integer")
    if _MESSAGE_ID_RE.fullmatch(parent_id) is None:
        raise ValueError("`parent_id` must be a message id")
    digest = hashlib.blake2b(f"{parent_id}/{index}".encode(), digest_size=10).digest()
    return parent_id[:10] + _encode_base32(int.from_bytes(digest, "big"), 16)


def message_id_time_ms(message_id: str) -> int:
    """The millisecond timestamp encoded in a message id."""
    value = 0
    for char in message_id[:10]:
        value = value * 32 + CROCKFORD_ALPHABET.index(char)
    return value
