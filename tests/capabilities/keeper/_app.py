"""An installed app that asks for capabilities when the agent's tool calls tell it to, and
answers each call with what the runtime's capability gateway gave it back.

`keeper.ask` runs wherever the app is (it is launched behind the current app);
`keeper.ask_front` needs the app in the foreground; `keeper.make` keeps an artifact, for a
`file.save` of it; `keeper.digest` reads one of its artifacts back (a file the user chose
for it) and answers with its SHA-256, size and type. The first two take the request as
their arguments: `capability`, `purpose`, `input`, and `timeout_s` (how long the user has).
The manifest declares every capability the tests ask for but `camera.capture`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from apps.sdk import RuntimeApp, declare_app, tool

_REQUEST = {
    "type": "object",
    "properties": {
        "capability": {"type": "string"},
        "purpose": {"type": "string"},
        "input": {},
        "timeout_s": {"type": "number"},
    },
    "required": ["capability", "purpose"],
    "additionalProperties": False,
}
_ANY = {"type": "object"}


@declare_app(
    app_scope="keeper",
    version="1.0.0",
    title="Keeper",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    required_features=[
        "app.lifecycle.v1",
        "app.tools.v1",
        "artifact.create.v1",
        "capability.request.v1",
    ],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
    capabilities=[
        "file.save",
        "file.open",
        "notification.show",
        "clipboard.write",
        "microphone.record",
        "speech.speak",
        "speech.transcribe",
    ],
)
class KeeperApp(RuntimeApp):
    @tool(
        "keeper.ask",
        input_schema=_REQUEST,
        output_schema=_ANY,
        timeout_ms=120_000,
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def ask(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Asks for a capability from wherever the app is; answers with the outcome."""
        return await self._ask(arguments)

    @tool(
        "keeper.ask_front",
        input_schema=_REQUEST,
        output_schema=_ANY,
        timeout_ms=120_000,
        activation_requirement="foreground_required",
    )
    async def ask_front(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Asks for a capability with the app in the foreground; answers with the outcome."""
        return await self._ask(arguments)

    @tool(
        "keeper.make",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}, "title": {"type": "string"}},
            "required": ["text", "title"],
            "additionalProperties": False,
        },
        output_schema=_ANY,
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def make(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Keeps the text as an artifact of the app; answers with its reference."""
        data = arguments["text"].encode()
        return await self.sdk.artifacts.create(data, "text/plain", arguments["title"])

    @tool(
        "keeper.digest",
        input_schema={
            "type": "object",
            "properties": {"artifact_id": {"type": "string"}},
            "required": ["artifact_id"],
            "additionalProperties": False,
        },
        output_schema=_ANY,
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def digest(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Reads one of its artifacts back: its SHA-256, size and media type."""
        found = await self.sdk.artifacts.read(arguments["artifact_id"])
        return {
            "sha256": hashlib.sha256(found["data"]).hexdigest(),
            "size": len(found["data"]),
            "media_type": found["artifact"]["media_type"],
        }

    async def _ask(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.sdk.capabilities.request(
            arguments["capability"],
            arguments["purpose"],
            arguments.get("input"),
            timeout_s=float(arguments.get("timeout_s", 60)),
        )
