"""An installed app that keeps its state in its session data, driven by the agent's tool
calls: each tool does one thing with `sdk.session_data` and answers what the runtime said
(a refusal is an answer too: `{"refused": code}`).

What its subscribers saw is the record the tests check: every frame a listener gets is
appended to `frames.jsonl` in the app's private directory (flushed to disk), with the
listener's name, so a frame seen twice or out of order shows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import trio

from apps.sdk import CallFailed, RuntimeApp, ToolCall, declare_app, tool

FRAMES = "frames.jsonl"
_ANY = {"type": "object"}
_NAMED = {
    "type": "object",
    "properties": {"instance_id": {"type": "string"}},
    "additionalProperties": False,
}
_REPLACE = {
    "type": "object",
    "properties": {
        "data": {"type": "object"},
        "expected_revision": {"type": "integer"},
        "instance_id": {"type": "string"},
    },
    "required": ["data", "expected_revision"],
    "additionalProperties": False,
}
_TIMES = {
    "type": "object",
    "properties": {"times": {"type": "integer", "minimum": 1, "maximum": 1000}},
    "required": ["times"],
    "additionalProperties": False,
}
_LISTENER = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}
_SLOW = {"launch": "if_needed", "focus": "background"}


def _record(line: dict[str, Any]) -> None:
    with open(FRAMES, "a", encoding="utf-8") as frames:
        frames.write(json.dumps(line) + "\n")
        frames.flush()
        os.fsync(frames.fileno())


async def _answer(ask: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    try:
        return await ask
    except CallFailed as refused:
        return {"refused": refused.code}


@declare_app(
    app_scope="notebook",
    version="1.0.0",
    title="Notebook",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    required_features=["app.lifecycle.v1", "app.tools.v1", "app.session-data.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class NotebookApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.unsubscribe: dict[str, Callable[[], None]] = {}

    def _instance(self, arguments: dict[str, Any], call: ToolCall) -> str | None:
        return arguments.get("instance_id", call.instance_id)

    @tool("note.get", input_schema=_NAMED, output_schema=_ANY, launch_policy=_SLOW)
    async def get(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """The instance's session data and revision (the call's instance, or the one named)."""
        return await _answer(self.sdk.session_data.get(instance_id=self._instance(arguments, call)))

    @tool("note.replace", input_schema=_REPLACE, output_schema=_ANY, launch_policy=_SLOW)
    async def replace(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Replace the data, made from `expected_revision`."""
        return await _answer(
            self.sdk.session_data.replace(
                arguments["data"],
                arguments["expected_revision"],
                instance_id=self._instance(arguments, call),
            )
        )

    @tool("note.listen", input_schema=_LISTENER, output_schema=_ANY, launch_policy=_SLOW)
    async def listen(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Subscribe a listener that records every frame it gets under `name`."""
        name = arguments["name"]

        def listener(snapshot: dict[str, Any]) -> None:
            _record({"listener": name, **snapshot})

        self.unsubscribe[name] = await self.sdk.session_data.subscribe(
            listener, instance_id=call.instance_id
        )
        return {"listening": name}

    @tool("note.race", input_schema=_NAMED, output_schema=_ANY, launch_policy=_SLOW)
    async def race(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Two writers at once, both made from the revision read first."""
        data = self.sdk.session_data
        first = await data.get(instance_id=call.instance_id)
        outcomes: dict[str, Any] = {}

        async def write(writer: str) -> None:
            outcomes[writer] = await _answer(
                data.replace({"writer": writer}, first["revision"], instance_id=call.instance_id)
            )

        async with trio.open_nursery() as writers:
            for writer in ("a", "b"):
                writers.start_soon(write, writer)
        return {"read": first["revision"], "outcomes": outcomes}

    @tool("note.between", input_schema=_TIMES, output_schema=_ANY, launch_policy=_SLOW)
    async def between(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """`times` rounds of: get, then a replace and a new subscription at once; each round's
        listener must see the replaced revision exactly once, whichever came first."""
        data = self.sdk.session_data
        rounds = []
        for n in range(arguments["times"]):
            read = await data.get(instance_id=call.instance_id)
            written = read["revision"] + 1
            seen: list[int] = []
            got = trio.Event()

            def listener(
                snapshot: dict[str, Any],
                seen: list[int] = seen,
                got: trio.Event = got,
                written: int = written,
            ) -> None:
                seen.append(snapshot["revision"])
                if snapshot["revision"] == written:
                    got.set()

            async with trio.open_nursery() as both:
                replace = partial(data.replace, instance_id=call.instance_id)
                both.start_soon(replace, {"round": n}, read["revision"])
                stop = await data.subscribe(listener, instance_id=call.instance_id)
            with trio.move_on_after(10):
                await got.wait()
            stop()
            rounds.append({"read": read["revision"], "seen": seen})
        return {"rounds": rounds}

    @tool(
        "note.count",
        input_schema=_TIMES,
        output_schema=_ANY,
        idempotent=True,
        timeout_ms=120_000,
        launch_policy=_SLOW,
    )
    async def count(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Count up to `times` in the session data, one replace a step, each made from the
        revision read before it: `n` equals the revision unless a write counted twice. Safe
        to run again after a crash: its requests' ids derive from the call, so the runtime
        answers the ones it already handled as it did the first time."""
        data = self.sdk.session_data
        revisions = []
        for _ in range(arguments["times"]):
            read = await data.get(instance_id=call.instance_id)
            n = int((read["data"] or {}).get("n", 0)) + 1
            written = await data.replace({"n": n}, read["revision"], instance_id=call.instance_id)
            revisions.append(written["revision"])
        final = await data.get(instance_id=call.instance_id)
        return {"revisions": revisions, "final": final}
