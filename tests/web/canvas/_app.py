"""An installed app with a surface: a board the user draws on.

Its surface (`ui/`) is shown inline first (a card in the conversation), may ask for the
stage and back, emits `stroke` events, keeps how often it was opened in the instance's
session data and asks to copy the drawing to the clipboard, all through the bridge; its
"Remind me" button asks for a notification, its other buttons ask the user for a file and
save the drawing. The app's process appends each stroke it is told of to `strokes.jsonl` in
its private directory (flushed to disk: the test reads it as the app's own record) and
patches the surface's state with the count.

Its tool `board.clear` is answered by its surface (`delivery: surface_bridge`): the app's
handler hands the call over, and the surface's answer, as its arguments ask for (one that
fits the output schema or one that breaks it, held until the surface's nth visit if asked),
is the call's end.
"""

from __future__ import annotations

import json
import os
from typing import Any

from apps.sdk import RuntimeApp, declare_app, tool

STROKES = "strokes.jsonl"
STROKE = {
    "name": "stroke",
    "payload_schema": {
        "type": "object",
        "properties": {
            "x": {"type": "integer", "minimum": 0, "maximum": 1000},
            "y": {"type": "integer", "minimum": 0, "maximum": 1000},
            "colour": {"enum": ["red", "blue"]},
        },
        "required": ["x", "y", "colour"],
        "additionalProperties": False,
    },
}


def _append(record: dict[str, Any]) -> int:
    """Append `record` to the strokes file, on disk before the answer; how many it holds."""
    with open(STROKES, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
        log.flush()
        os.fsync(log.fileno())
    with open(STROKES, encoding="utf-8") as log:
        return sum(1 for _ in log)


@declare_app(
    app_scope="canvas",
    version="1.0.0",
    title="Canvas",
    entrypoints=[
        {
            "id": "board",
            "kind": "primary",
            "surface": "ui/index.html",
            "surface_events": [STROKE],
            "display_modes": ["inline", "stage"],
        }
    ],
    required_features=[
        "app.lifecycle.v1",
        "app.session-data.v1",
        "capability.request.v1",
        "app.tools.v1",
    ],
    capabilities=["clipboard.write", "file.open", "file.save", "notification.show"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class CanvasApp(RuntimeApp):
    @tool(
        "board.clear",
        input_schema={
            "type": "object",
            "properties": {
                "answer": {"enum": ["fits", "off_schema"]},
                "hold_until_visit": {"type": "integer", "minimum": 1},
            },
            "required": ["answer"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {"cleared": {"type": "integer"}, "visits": {"type": "integer"}},
            "required": ["cleared", "visits"],
            "additionalProperties": False,
        },
        timeout_ms=20_000,
        activation_requirement="foreground_required",
        delivery="surface_bridge",
    )
    async def clear(self, arguments: dict[str, Any]) -> None:
        """Clears the board the user sees: its surface does it, and answers."""

    async def on_app_start(self) -> None:
        self.sdk.surface.on_event("stroke", self.stroke)

    async def stroke(self, payload: dict[str, Any], instance_id: str) -> None:
        count = _append({"instance_id": instance_id, **payload})
        await self.sdk.surface.patch(
            {"strokes": count, "last": payload["colour"]}, instance_id=instance_id
        )
