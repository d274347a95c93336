"""What the transport takes, and from whom: the router that the outbox has something new
(how far the stream is durable is the router's answer to each run it is handed); the tool
router gives it its envelopes for the agent. The stream's position and the outbox are
written by nobody else."""

from __future__ import annotations

from pydantic import ConfigDict
from typing_extensions import TypedDict

from actors.kernel import Door, accept

_CLOSED = ConfigDict(extra="forbid")


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
        "transport.outbox.wake": accept("router", body=Wake),
        "transport.submit": accept("tool_router", body=Submit),
    }
)
