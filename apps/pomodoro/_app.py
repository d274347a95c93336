"""The pomodoro app: one focus timer per instance, kept in memory.

Tool apps get an instance per conversation, so one timer per instance is one
per conversation. A timer lost with its process is simply gone: nothing here is worth a
durable record, and `pomodoro.status` then says `idle`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from apps.sdk import RuntimeApp, declare_app, tool

_NO_ARGUMENTS = {"type": "object", "additionalProperties": False}
_SESSION = {
    "type": "object",
    "properties": {
        "state": {"enum": ["idle", "running", "finished"]},
        "minutes": {"type": "integer", "minimum": 1, "maximum": 120},
        "remaining_seconds": {"type": "integer", "minimum": 0},
        "ends_at": {"type": "string"},
    },
    "required": ["state"],
    "additionalProperties": False,
}


@declare_app(
    app_scope="pomodoro",
    version="0.1.0",
    title="Pomodoro",
    entrypoints=[{"id": "timer", "kind": "contextual"}],
    required_features=["app.lifecycle.v1", "app.tools.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class PomodoroApp(RuntimeApp):
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._clock = clock
        self._minutes = 0
        self._ends_at: float | None = None

    def _session(self) -> dict[str, Any]:
        if self._ends_at is None:
            return {"state": "idle"}
        remaining = max(0, math.ceil(self._ends_at - self._clock()))
        ends_at = datetime.fromtimestamp(self._ends_at, UTC).isoformat(timespec="seconds")
        return {
            "state": "running" if remaining else "finished",
            "minutes": self._minutes,
            "remaining_seconds": remaining,
            "ends_at": ends_at.replace("+00:00", "Z"),
        }

    @tool(
        "pomodoro.start",
        title="Start a focus timer",
        input_schema={
            "type": "object",
            "properties": {"minutes": {"type": "integer", "minimum": 1, "maximum": 120}},
            "required": ["minutes"],
            "additionalProperties": False,
        },
        output_schema=_SESSION,
        risk="low",
        # The user should see the timer they just asked for.
        activation_requirement="foreground_required",
        launch_policy={"launch": "if_needed", "focus": "foreground"},
    )
    async def start(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Starts a timer of `minutes`, replacing any running one. The timer is running
        once the result arrives."""
        self._minutes = int(arguments["minutes"])
        self._ends_at = self._clock() + 60 * self._minutes
        return self._session()

    @tool(
        "pomodoro.status",
        title="Focus timer status",
        input_schema=_NO_ARGUMENTS,
        output_schema=_SESSION,
        call_model="query",
        idempotent=True,
        risk="low",
        launch_policy={"launch": "if_needed", "focus": "background"},
        annotations={"read_only_hint": True},
    )
    async def status(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The current timer: idle, running (with the time left) or finished."""
        return self._session()

    @tool(
        "pomodoro.stop",
        title="Stop the focus timer",
        input_schema=_NO_ARGUMENTS,
        output_schema={
            "type": "object",
            "properties": {"stopped": {"type": "boolean"}},
            "required": ["stopped"],
            "additionalProperties": False,
        },
        idempotent=True,
        risk="low",
        # A timer lives only in a running app: there is nothing to stop in one not started.
        launch_policy={"launch": "never"},
    )
    async def stop(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Stops the timer; `stopped` says whether one was running."""
        running = self._session()["state"] == "running"
        self._ends_at = None
        return {"stopped": running}
