"""What the router takes, and from whom: the stream from the transport (a call, answered
once the run is durable and delivered), the registry's view from the app manager, and from
any app process its declarative actions (the SDK's surface). Whether an app may speak for
the user is the router's next check: only chat."""

from __future__ import annotations

from pydantic import ConfigDict, JsonValue
from typing_extensions import TypedDict

from actors.kernel import APPS, Door, accept

_CLOSED = ConfigDict(extra="forbid")


class Inbound(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    items: list[tuple[int, str]]


class AppRoute(TypedDict):
    """What the router knows of one app (filter chain steps 4, 6, 7)."""

    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    enabled: bool
    subscriptions: list[str]
    instances: list[str]


class Apps(TypedDict, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    apps: dict[str, AppRoute]


DOOR = Door(
    {
        "router.inbound": accept("transport", body=Inbound),
        "router.apps": accept("app_manager", body=Apps),
        # The action's own fields are the contract's (`user_envelope` names a bad one).
        "router.action": accept(APPS, body=dict[str, JsonValue]),
    }
)
