"""An installed app whose calls the runtime keeps until a deadline, and that acts on them as
its surface would for the user: `clock.act` finishes, pauses, resumes or stops the call it
names, and answers what the runtime said (or the code it refused with). Built a second time
under another scope, it is the rival that tries the same on an operation not its own. What
the runtime tells it of its operations it appends to `told.log` in its private directory."""

from __future__ import annotations

from typing import Any

from apps.sdk import CallFailed, RuntimeApp, declare_app, tool

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
# What the app itself ends a call with, early.
_SAID = {
    "type": "object",
    "properties": {"said": {"type": "string"}},
    "required": ["said"],
    "additionalProperties": False,
}
_ACT = {
    "type": "object",
    "properties": {
        "call_id": {"type": "string"},
        "action": {"enum": ["finish", "pause", "resume", "interrupt"]},
        "output": {"type": "object"},
    },
    "required": ["call_id", "action"],
    "additionalProperties": False,
}
_BACKGROUND = {"launch": "if_needed", "focus": "background"}
TOLD = "told.log"


@declare_app(
    app_scope="clocks",
    version="1.0.0",
    title="Clocks",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    required_features=["app.lifecycle.v1", "app.tools.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class ClocksApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.sdk.tools.on_deadline(self._told)

    def _told(self, operation: dict[str, Any]) -> None:
        with open(TOLD, "a", encoding="utf-8") as told:
            told.write(f"{operation['call_id']} {operation['state']}\n")

    @tool(
        "clock.run",
        input_schema={
            "type": "object",
            "properties": {"seconds": {"type": "number", "exclusiveMinimum": 0}},
            "required": ["seconds"],
            "additionalProperties": False,
        },
        output_schema={"type": "object", "anyOf": [_FINISHED, _SAID]},
        call_model="operation",
        handling="runtime_operation",
        timeout_ms=10_000,
        launch_policy=_BACKGROUND,
    )
    async def run(self, arguments: dict[str, Any]) -> Any:
        """Runs for `seconds`, kept by the runtime."""
        return self.sdk.tools.deadline(arguments["seconds"])

    @tool(
        "clock.act",
        input_schema=_ACT,
        output_schema={"type": "object"},
        launch_policy=_BACKGROUND,
    )
    async def act(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Acts on the named call's operation; what the runtime answered."""
        call_id, tools = arguments["call_id"], self.sdk.tools
        try:
            if arguments["action"] == "finish":
                return {"answer": await tools.finish_deadline(call_id, arguments["output"])}
            act = {
                "pause": tools.pause_deadline,
                "resume": tools.resume_deadline,
                "interrupt": tools.interrupt_deadline,
            }[arguments["action"]]
            return {"answer": await act(call_id)}
        except CallFailed as refused:
            return {"refused": refused.code}
