"""What the tool router takes, and from whom: the agent's calls and cancels from the store
once it stored them, the registry's view from the app manager, and from any app process
its reports on its own calls (whose calls they are is the router's next check)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field
from typing_extensions import TypedDict

from actors.kernel import APPS, Door, accept

_CLOSED = ConfigDict(extra="forbid")


class Inbound(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    calls: list[dict[str, Any]]
    associate: dict[str, str]


class Report(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    call_id: Annotated[str, Field(max_length=70)]
    kind: Literal["progress", "result", "error"]
    stage: NotRequired[Annotated[str, Field(max_length=200)] | None]
    percent: NotRequired[Annotated[int, Field(ge=0, le=100)] | None]
    message: NotRequired[Annotated[str, Field(max_length=4096)] | None]
    output: NotRequired[dict[str, Any]]
    code: NotRequired[Annotated[str, Field(max_length=64)]]


DOOR = Door(
    {
        "tool_router.inbound": accept("store", body=Inbound),
        "tool_router.apps": accept("app_manager", body=dict[str, Any]),
        "tool_router.report": accept(APPS, body=Report),
    }
)
