"""What the app manager takes, and from whom: requests from the user's side (the operator,
the host, the app-registry app) and navigation from any app, whose limits the manager
checks before it writes anything; host intents from the host; and the supervisor's notice
that an app process is past its restart intensity."""

from __future__ import annotations

from pydantic import ConfigDict, JsonValue
from typing_extensions import TypedDict

from actors.kernel import APPS, Door, accept

_CLOSED = ConfigDict(extra="forbid")


class HostIntent(TypedDict):
    """One of the host's intents (it checked which), by the UI session that said it."""

    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    intent: str
    app_scope: str | None
    session_id: str


class ActorFailed(TypedDict):
    """The supervisor's notice: the actor `name` is past its restart intensity."""

    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    name: str
    reason: str


DOOR = Door(
    {
        # An operation's own fields are checked by the manager before it writes anything.
        "app_manager.request": accept("host", "tool_router", APPS, body=dict[str, JsonValue]),
        "app_manager.host_intent": accept("host", body=HostIntent),
        "kernel.actor_failed": accept("supervisor", body=ActorFailed),
    }
)
