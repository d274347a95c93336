"""What the app manager takes, and from whom: requests from the user's side (the operator,
the host, the app-registry app) and navigation from any app, whose limits the manager
checks before it writes anything; host intents from the host; and the supervisor's notice
that an app process is past its restart intensity."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from actors.kernel import APPS, Door, accept

DOOR = Door(
    {
        "app_manager.request": accept("host", "tool_router", APPS, body=dict[str, JsonValue]),
        "app_manager.host_intent": accept("host", body=dict[str, Any]),
        "kernel.actor_failed": accept("supervisor", body=dict[str, Any]),
    }
)
