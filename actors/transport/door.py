"""What the transport takes, and from whom: the store says how far the stream is durable
(after its commit), and the router or the store that the outbox has something new. The
stream's position and the outbox are written by nobody else."""

from __future__ import annotations

from pydantic import ConfigDict
from typing_extensions import TypedDict

from actors.kernel import Door, accept

_CLOSED = ConfigDict(extra="forbid")


class Persisted(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    cursor: int


class Wake(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]


DOOR = Door(
    {
        "transport.persisted": accept("store", body=Persisted),
        "transport.outbox.wake": accept("router", "store", body=Wake),
    }
)
