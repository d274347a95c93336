"""An installed app whose tools behave in every way a tool can: answer, count, fail, refuse,
break their output schema, hang, report progress, need the foreground, and take long.

`box.count` is the side effect the tests check from an independent record: before it
answers it appends its call id to `effects.log` in the app's private directory (flushed to
disk), so a call that ran twice shows twice.
"""

from __future__ import annotations

import os
from typing import Any

import trio

from actors.contracts import Code, ContractError
from apps.sdk import RuntimeApp, ToolCall, declare_app, tool

EFFECTS = "effects.log"
SETTLE_S = 0.05
_NOTHING = {"type": "object", "additionalProperties": False}
_ANY = {"type": "object"}
_COUNTED = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}


def _record(call_id: str) -> int:
    with open(EFFECTS, "a", encoding="utf-8") as log:
        log.write(call_id + "\n")
        log.flush()
        os.fsync(log.fileno())
    with open(EFFECTS, encoding="utf-8") as log:
        return sum(1 for _ in log)


@declare_app(
    app_scope="toolbox",
    version="1.0.0",
    title="Toolbox",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    required_features=["app.lifecycle.v1", "app.tools.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class ToolboxApp(RuntimeApp):
    @tool(
        "box.echo",
        input_schema={
            "type": "object",
            "properties": {"value": {"type": "string"}},
            "required": ["value"],
            "additionalProperties": False,
        },
        output_schema=_ANY,
        call_model="query",
        idempotent=True,
        risk="low",
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def echo(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Answers with its argument."""
        return {"echo": arguments["value"]}

    @tool(
        "box.count",
        input_schema=_NOTHING,
        output_schema=_COUNTED,
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def count(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Records the call once in the app's effects log; answers how many it holds."""
        n = await trio.to_thread.run_sync(_record, call.call_id)
        await trio.sleep(SETTLE_S)  # a window in which a kill finds the effect done, unreported
        return {"n": n}

    @tool(
        "box.count_again",
        input_schema=_NOTHING,
        output_schema=_COUNTED,
        idempotent=True,
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def count_again(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Like box.count, but safe to repeat: the runtime may run it again after a crash."""
        n = await trio.to_thread.run_sync(_record, call.call_id)
        await trio.sleep(SETTLE_S)
        return {"n": n}

    @tool("box.fail", input_schema=_NOTHING, output_schema=_ANY)
    async def fail(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Always fails."""
        raise RuntimeError("the toolbox's handler broke")

    @tool("box.refuse", input_schema=_NOTHING, output_schema=_ANY)
    async def refuse(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Always refused by the user."""
        raise ContractError(Code.PERMISSION_DENIED, "the user said no")

    @tool("box.bad_output", input_schema=_NOTHING, output_schema=_COUNTED)
    async def bad_output(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Answers something its output schema does not allow."""
        return {"n": "not a number"}

    @tool("box.hang", input_schema=_NOTHING, output_schema=_ANY, timeout_ms=500)
    async def hang(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Never answers."""
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    @tool("box.slow", input_schema=_NOTHING, output_schema=_ANY, call_model="operation")
    async def slow(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Reports its progress three times, then answers."""
        await call.progress(stage="started", percent=0)
        for percent in (50, 100):
            await call.progress(percent=percent)
        return {"done": True}

    @tool("box.trickle", input_schema=_NOTHING, output_schema=_ANY, timeout_ms=1_000)
    async def trickle(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Takes twice its timeout, showing progress often enough to keep going."""
        for percent in range(10, 101, 10):
            await trio.sleep(0.2)
            await call.progress(percent=percent)
        return {"done": True}

    @tool("box.forever", input_schema=_NOTHING, output_schema=_ANY, timeout_ms=400)
    async def forever(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Shows progress and never ends: only the absolute cap stops it."""
        while True:
            await trio.sleep(0.05)
            await call.progress(message="still going")

    @tool("box.sleep", input_schema=_NOTHING, output_schema=_ANY, timeout_ms=60_000)
    async def sleep(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Takes a minute: long enough to be cancelled."""
        await trio.sleep(60)
        return {}

    @tool(
        "box.front",
        input_schema=_NOTHING,
        output_schema=_ANY,
        activation_requirement="foreground_required",
    )
    async def front(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Needs the user to see the app; gives the previous app back when done."""
        return {"shown": True}
