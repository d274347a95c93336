"""What an app process takes, and from whom: what the store persisted for it, the router's
word on its actions, the user's input through the host, its instances' lifecycle from the
app manager, the agent's tool calls (and, for the interaction app, how every call goes) from
the tool router, its own session data's changes from the store. Nothing from another app:
no app can put words in the agent's or the user's mouth for another. (The supervisor's own
notices reach every actor without a door.)"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict
from typing_extensions import TypedDict

from actors.kernel import Door, accept


class Deliver(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    messages: list[dict[str, Any]]


class ToolInvoke(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    call_id: str
    method: str
    arguments: dict[str, Any]
    app_scope: str
    conversation_id: str
    instance_id: str | None


class ToolCancel(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    call_id: str


class SessionDataChanged(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    instance_id: str
    data: dict[str, Any]
    revision: int


DOOR = Door(
    {
        "app.deliver": accept("store", body=Deliver),
        "app.action.state": accept("router", "store", body=dict[str, Any]),
        "app.input": accept("host", body=dict[str, Any]),
        "app.lifecycle": accept("app_manager", body=dict[str, Any]),
        "app.tool.invoke": accept("tool_router", body=ToolInvoke),
        "app.tool.cancel": accept("tool_router", body=ToolCancel),
        # A deadline operation of the app's started or ended (the runtime's record of it).
        "app.tool.deadline": accept("tool_router", body=dict[str, Any]),
        # The interaction app's view of the agent's tool calls (a step of one call).
        "app.tool.event": accept("tool_router", body=dict[str, Any]),
        # A capability consent card opened or closed (the interaction app shows it).
        "app.capability.consent": accept("capability_gateway", body=dict[str, Any]),
        # A committed replace of the app's own session data, announced after the commit.
        "app.session_data.changed": accept("store", body=SessionDataChanged),
        # A surface's request, checked by the page and the web host, relayed for the
        # instance the web host shows (`_surface`).
        "app.surface.request": accept("web_host", body=dict[str, Any]),
    }
)
