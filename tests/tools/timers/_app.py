"""An installed app whose calls the runtime keeps until a deadline, in seconds: run one in
the background or in front, stop or list the app's own; and the ways to get it wrong: an
output schema that cannot take a deadline's result, a deadline from a tool declared to
answer itself, an answer from a tool whose result is declared the runtime's. What the
runtime tells it of its timers (each start and end) it appends to `told.log` in its private
directory, the record the tests read."""

from __future__ import annotations

from typing import Any

from apps.sdk import RuntimeApp, ToolCall, declare_app, tool

_MOMENT = {"type": "string"}
_FINISHED = {
    "type": "object",
    "properties": {
        "state": {"const": "finished"},
        "started_at": _MOMENT,
        "ends_at": _MOMENT,
        "ended_at": _MOMENT,
        "noticed_at": _MOMENT,
    },
    "required": ["state", "started_at", "ends_at", "ended_at", "noticed_at"],
    "additionalProperties": False,
}
_SECONDS = {
    "type": "object",
    "properties": {"seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600}},
    "required": ["seconds"],
    "additionalProperties": False,
}
_NOTHING = {"type": "object", "additionalProperties": False}
_BACKGROUND = {"launch": "if_needed", "focus": "background"}
TOLD = "told.log"
# A timer that runs from when the app is in front.
_IN_FRONT: dict[str, Any] = {
    "input_schema": _SECONDS,
    "output_schema": _FINISHED,
    "call_model": "operation",
    "handling": "runtime_operation",
    "timeout_ms": 20_000,
    "activation_requirement": "foreground_required",
    "launch_policy": {"launch": "if_needed", "focus": "foreground"},
}


@declare_app(
    app_scope="timers",
    version="1.0.0",
    title="Timers",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    required_features=["app.lifecycle.v1", "app.tools.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class TimersApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.sdk.tools.on_deadline(self._told)

    def _told(self, operation: dict[str, Any]) -> None:
        with open(TOLD, "a", encoding="utf-8") as told:
            told.write(f"{operation['call_id']} {operation['state']}\n")

    @tool(
        "timer.run",
        input_schema=_SECONDS,
        output_schema=_FINISHED,
        call_model="operation",
        handling="runtime_operation",
        timeout_ms=10_000,
        launch_policy=_BACKGROUND,
    )
    async def run(self, arguments: dict[str, Any]) -> Any:
        """Runs for `seconds`, kept by the runtime."""
        seconds = arguments["seconds"]
        return self.sdk.tools.deadline(seconds, display={"seconds": seconds})

    @tool("timer.front", **_IN_FRONT)
    async def front(self, arguments: dict[str, Any]) -> Any:
        """Runs for `seconds` from when the app is in front."""
        return self.sdk.tools.deadline(arguments["seconds"])

    @tool("timer.replace", **_IN_FRONT)
    async def replace(self, arguments: dict[str, Any], call: ToolCall) -> Any:
        """Stops the app's open timers in this conversation, then runs for `seconds` from
        when the app is in front."""
        await call.interrupt_deadlines()
        return self.sdk.tools.deadline(arguments["seconds"])

    @tool(
        "timer.stop",
        input_schema=_NOTHING,
        output_schema={"type": "object"},
        launch_policy=_BACKGROUND,
    )
    async def stop(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Stops the app's running timers in this conversation; names them."""
        return {"stopped": [o["call_id"] for o in await call.interrupt_deadlines()]}

    @tool(
        "timer.list",
        input_schema=_NOTHING,
        output_schema={"type": "object"},
        call_model="query",
        launch_policy=_BACKGROUND,
    )
    async def timers(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """The app's latest timers in this conversation, as the runtime recorded them."""
        return {"timers": await call.deadlines()}

    @tool(
        "timer.misfit",
        input_schema=_SECONDS,
        output_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        },
        handling="runtime_operation",
        launch_policy=_BACKGROUND,
    )
    async def misfit(self, arguments: dict[str, Any]) -> Any:
        """Asks for a deadline its output schema cannot take."""
        return self.sdk.tools.deadline(arguments["seconds"])

    @tool(
        "timer.direct",
        input_schema=_SECONDS,
        output_schema={"type": "object"},
        launch_policy=_BACKGROUND,
    )
    async def direct(self, arguments: dict[str, Any]) -> Any:
        """Asks for a deadline, though declared to answer itself."""
        return self.sdk.tools.deadline(arguments["seconds"])

    @tool(
        "timer.answers",
        input_schema=_SECONDS,
        output_schema={"type": "object"},
        handling="runtime_operation",
        launch_policy=_BACKGROUND,
    )
    async def answers(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Answers itself, though its result is declared the runtime's."""
        return {"state": "finished"}
