"""The AppServer's verdict on one outbox item, as the transport reports it to the router
and the router hands it to the store to record: a kernel message body, closed to other
keys."""

from __future__ import annotations

from pydantic import ConfigDict
from typing_extensions import TypedDict


class _VerdictRequired(TypedDict):
    key: str
    status: str


class OutboxVerdict(_VerdictRequired, total=False):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    seq: int | None
    code: str | None
    detail: str | None
