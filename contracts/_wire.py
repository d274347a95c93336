"""AppServer wire protocol v1: the JSON frames on the WebSocket (see docs/protocol.md).

Runtime and agent are both clients of the AppServer and speak the same frames; `hello.role`
says which one is talking. Each frame is one JSON object in one WebSocket text message,
discriminated by `frame`. Messages inside frames (`message`) are RuntimeEnvelopes, or
legacy `lineup.v1.*` messages from peers that have not migrated; the frame layer checks
only that they are objects, and the receiver validates them with `validate_message`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final, Literal

from pydantic import Field, StringConstraints, TypeAdapter, ValidationError, model_validator

from contracts import _ids
from contracts._codes import Code, ContractError
from contracts._envelope import MAX_SEQUENCE
from contracts._ids import IdempotencyKey, Timestamp
from contracts._json import (
    MAX_ENVELOPE_BYTES,
    MAX_FRAME_BYTES,
    MAX_JSON_DEPTH,
    decode_json,
    encode_json,
)
from contracts._model import ContractModel, JsonObject, Label, Text, first_violation, rule
from contracts._tools import CodeField

PROTOCOL_VERSION: Final = 1
SUPPORTED_PROTOCOL_VERSIONS: Final = (1,)
MAX_BATCH_ITEMS: Final = 256
# A message sits at most 3 levels inside its frame (batch → items → item → message), so a
# frame may nest that much deeper than the messages it carries; each message's own depth
# is checked again when the receiver validates it.
FRAME_NESTING: Final = 3
PeerRole = Literal["runtime", "agent"]
# Which sender kinds a session of each role may submit (the agent is only ever an agent).
ROLE_SENDER_KINDS: Final = {
    "agent": frozenset({"agent"}),
    "runtime": frozenset({"runtime", "app", "user", "host"}),
}
Cursor = Annotated[int, Field(ge=0, le=MAX_SEQUENCE)]
Seq = Annotated[int, Field(ge=1, le=MAX_SEQUENCE)]
Nonce = Annotated[int, Field(ge=0, le=MAX_SEQUENCE)]
_PEER_ID_PATTERNS: Final = {
    "runtime": _ids.compile_pattern(_ids.DEVICE_ID_PATTERN),
    "agent": _ids.compile_pattern(_ids.AGENT_ID_PATTERN),
}


class ClientInfo(ContractModel):
    name: Label
    version: Label


class Hello(ContractModel):
    """Client → server, first frame: versions spoken, who is connecting, and the token."""

    frame: Literal["hello"]
    protocol_versions: Annotated[
        list[Annotated[int, Field(ge=1)]], Field(min_length=1, max_length=16)
    ]
    role: PeerRole
    peer_id: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    token: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    client: ClientInfo | None = None

    @model_validator(mode="after")
    def _peer_id(self) -> Hello:
        if _PEER_ID_PATTERNS[self.role].fullmatch(self.peer_id) is None:
            raise rule("peer_id", f"not a valid {self.role} id")
        return self


class Welcome(ContractModel):
    """Server → client: the session is authenticated; the chosen version and the limits."""

    frame: Literal["welcome"]
    protocol_version: Annotated[int, Field(ge=1)]
    session_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    server_time: Timestamp
    heartbeat_interval_ms: Annotated[int, Field(ge=1000, le=300_000)]
    max_frame_bytes: Annotated[int, Field(ge=MAX_ENVELOPE_BYTES + 4096, le=MAX_FRAME_BYTES)]
    max_batch_items: Annotated[int, Field(ge=1, le=MAX_BATCH_ITEMS)]
    max_unacked: Annotated[int, Field(ge=1, le=1 << 20)]


class ErrorFrame(ContractModel):
    """Server → client: a refusal. When `fatal`, the server closes the connection after it."""

    frame: Literal["error"]
    code: CodeField
    detail: Text
    fatal: bool
    supported_versions: list[int] | None = None


class Sync(ContractModel):
    """Client → server: send me up to `limit` messages with `seq > cursor`."""

    frame: Literal["sync"]
    cursor: Cursor
    limit: Annotated[int, Field(ge=1, le=MAX_BATCH_ITEMS)] = MAX_BATCH_ITEMS


def _check_stamp(seq: int, message: JsonObject) -> None:
    # A server may stamp its number into the message it forwards; if so, they must agree.
    correlation = message.get("correlation")
    stamped = correlation.get("sequence") if isinstance(correlation, dict) else message.get("seq")
    if stamped is not None and stamped != seq:
        raise rule("message", f"carries sequence {stamped!r}, the frame says {seq}")


class Item(ContractModel):
    seq: Seq
    message: JsonObject

    @model_validator(mode="after")
    def _stamp(self) -> Item:
        _check_stamp(self.seq, self.message)
        return self


class Batch(ContractModel):
    """Server → client: the answer to one `sync`, in ascending `seq` order."""

    frame: Literal["batch"]
    items: Annotated[list[Item], Field(max_length=MAX_BATCH_ITEMS)]

    @model_validator(mode="after")
    def _ascending(self) -> Batch:
        seqs = [item.seq for item in self.items]
        if any(a >= b for a, b in itertools.pairwise(seqs)):
            raise rule("items", "seq must strictly increase")
        return self


class BacklogEnd(ContractModel):
    """Server → client: the backlog is exhausted at `cursor`; live `deliver` frames follow."""

    frame: Literal["backlog_end"]
    cursor: Cursor


class Deliver(ContractModel):
    """Server → client: one live message."""

    frame: Literal["deliver"]
    seq: Seq
    message: JsonObject

    @model_validator(mode="after")
    def _stamp(self) -> Deliver:
        _check_stamp(self.seq, self.message)
        return self


class Ack(ContractModel):
    """Client → server: every message with `seq <= cursor` is durably persisted."""

    frame: Literal["ack"]
    cursor: Cursor


class Submit(ContractModel):
    """Client → server: one outbox item; the server de-duplicates by `idempotency_key`."""

    frame: Literal["submit"]
    idempotency_key: IdempotencyKey
    message: JsonObject


class SubmitResult(ContractModel):
    """Server → client: the verdict on one `submit`, in submission order."""

    frame: Literal["submit_result"]
    idempotency_key: IdempotencyKey
    status: Literal["accepted", "rejected"]
    seq: Seq | None = None
    duplicate: bool = False
    code: CodeField | None = None
    detail: Text | None = None

    @model_validator(mode="after")
    def _verdict(self) -> SubmitResult:
        if self.status == "accepted" and (self.seq is None or self.code is not None):
            raise rule("seq", "an accepted submission has a seq and no code")
        if self.status == "rejected" and (self.code is None or self.seq is not None):
            raise rule("code", "a rejected submission has a code and no seq")
        return self


class Ping(ContractModel):
    """Either side: are you there? Answered by a `pong` with the same nonce."""

    frame: Literal["ping"]
    nonce: Nonce


class Pong(ContractModel):
    frame: Literal["pong"]
    nonce: Nonce


FRAME_MODELS: Final[dict[str, type[ContractModel]]] = {
    "hello": Hello,
    "welcome": Welcome,
    "error": ErrorFrame,
    "sync": Sync,
    "batch": Batch,
    "backlog_end": BacklogEnd,
    "deliver": Deliver,
    "ack": Ack,
    "submit": Submit,
    "submit_result": SubmitResult,
    "ping": Ping,
    "pong": Pong,
}
Frame = Annotated[
    Hello
    | Welcome
    | ErrorFrame
    | Sync
    | Batch
    | BacklogEnd
    | Deliver
    | Ack
    | Submit
    | SubmitResult
    | Ping
    | Pong,
    Field(discriminator="frame"),
]
FRAME_ADAPTER: Final[TypeAdapter[Frame]] = TypeAdapter(Frame)
CLIENT_FRAMES: Final = frozenset({"hello", "sync", "ack", "submit", "ping", "pong"})
SERVER_FRAMES: Final = frozenset(
    {"welcome", "error", "batch", "backlog_end", "deliver", "submit_result", "ping", "pong"}
)


def validate_frame(
    raw: bytes | bytearray | memoryview | str | Mapping[str, Any],
    *,
    sent_by: Literal["client", "server"] | None = None,
) -> Frame:
    """The frame, or `ContractError`: `invalid_frame` for a malformed one, `protocol_error`
    for a frame the given side never sends."""
    value = decode_json(raw, max_bytes=MAX_FRAME_BYTES, max_depth=MAX_JSON_DEPTH + FRAME_NESTING)
    try:
        frame = FRAME_ADAPTER.validate_python(value)
    except ValidationError as exc:
        raise ContractError(Code.INVALID_FRAME, first_violation(exc)) from None
    allowed = {"client": CLIENT_FRAMES, "server": SERVER_FRAMES}.get(sent_by or "")
    if allowed is not None and frame.frame not in allowed:
        raise ContractError(Code.PROTOCOL_ERROR, f"frame: a {sent_by} never sends {frame.frame!r}")
    return frame


def encode_frame(frame: Frame) -> bytes:
    """The frame's compact JSON text, absent optionals left out."""
    return encode_json(frame.model_dump(mode="json", exclude_none=True))


def negotiate_version(
    offered: Sequence[int], *, supported: Sequence[int] = SUPPORTED_PROTOCOL_VERSIONS
) -> int:
    """The highest version both sides speak, or `ContractError(unsupported_version)`."""
    common = set(offered) & set(supported)
    if not common:
        raise ContractError(
            Code.UNSUPPORTED_VERSION,
            f"offered {sorted(set(offered))}; this server speaks {sorted(supported)}",
        )
    return max(common)
