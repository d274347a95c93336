"""An installed app whose tools behave in every way a tool can: answer, count, fail, refuse,
break their output schema, hang, report progress, need the foreground, take long, and make,
read and list artifacts.

`box.count` is the side effect the tests check from an independent record: before it
answers it appends its call id to `effects.log` in the app's private directory (flushed to
disk), so a call that ran twice shows twice.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import trio

from apps.sdk import CallFailed, RuntimeApp, ToolCall, declare_app, tool
from contracts import Code, ContractError

EFFECTS = "effects.log"
SETTLE_S = 0.05
_NOTHING = {"type": "object", "additionalProperties": False}
_ANY = {"type": "object"}
_MADE = {
    "type": "object",
    "properties": {
        "size": {"type": "integer", "minimum": 0},
        "media_type": {"type": "string"},
        "title": {"type": "string"},
        "in_conversation": {"type": "boolean"},
    },
    "required": ["size", "media_type", "title"],
    "additionalProperties": False,
}
_NAMED = {
    "type": "object",
    "properties": {"artifact_id": {"type": "string"}},
    "required": ["artifact_id"],
    "additionalProperties": False,
}
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
    required_features=["app.lifecycle.v1", "app.tools.v1", "artifact.create.v1"],
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

    @tool("box.artifact", input_schema=_MADE, output_schema=_ANY)
    async def artifact(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Makes an artifact of `size` bytes (in the call's conversation unless told not to)
        and hands the agent its reference; a refusal's code instead."""
        data = bytes(n % 251 for n in range(arguments["size"]))
        conversation = call.conversation_id if arguments.get("in_conversation", True) else None
        try:
            reference = await self.sdk.artifacts.create(
                data, arguments["media_type"], arguments["title"], conversation
            )
        except CallFailed as refused:
            return {"refused": refused.code}
        return {"artifact": reference}

    @tool(
        "box.artifacts_many",
        input_schema={
            "type": "object",
            "properties": {"count": {"type": "integer", "minimum": 1, "maximum": 1000}},
            "required": ["count"],
            "additionalProperties": False,
        },
        output_schema=_ANY,
    )
    async def artifacts_many(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Makes `count` artifacts of one byte each, outside any conversation."""
        for n in range(arguments["count"]):
            await self.sdk.artifacts.create(bytes([n % 256]), "text/plain", f"many {n}")
        return {"made": arguments["count"]}

    @tool("box.read_artifact", input_schema=_NAMED, output_schema=_ANY)
    async def read_artifact(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Reads an artifact back: its metadata and the SHA-256 of its bytes."""
        try:
            found = await self.sdk.artifacts.read(arguments["artifact_id"])
        except CallFailed as refused:
            return {"refused": refused.code}
        return {**found["artifact"], "read_sha256": hashlib.sha256(found["data"]).hexdigest()}

    @tool("box.artifacts", input_schema=_NOTHING, output_schema=_ANY)
    async def artifacts(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Lists the ids of its own artifacts."""
        return {"ids": [row["artifact_id"] for row in await self.sdk.artifacts.list()]}
