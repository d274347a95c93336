"""What the transport takes, and from whom: the store says how far the stream is durable
(after its commit), and the router or the store that the outbox has something new; the
tool router gives it its envelopes for the agent. The stream's position and the outbox are
written by nobody else."""

from __future__ import annotations

from pydantic import ConfigDict
from typing_extensions import TypedDict

from actors.kernel import Door, accept

_CLOSED = ConfigDict(extra="forbid")


class Persisted(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    cursor: int


class Queued(TypedDict):
    order: int
    key: str
    envelope: str


class Wake(TypedDict, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    items: list[Queued]  # the items just queued, when the waker has them at hand


class ToolEnvelope(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    key: str  # the envelope's id: the AppServer's idempotency key
    envelope: str  # its JSON text
    conversation_id: str


class Submit(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    items: list[ToolEnvelope]


DOOR = Door(
    {
        "transport.persisted": accept("store", body=Persisted),
        "transport.outbox.wake": accept("router", "store", body=Wake),
        "transport.submit": accept("tool_router", body=Submit),
    }
)
