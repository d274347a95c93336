"""Two tools that ask the capability gateway for speech and time the request in the app.

`benchspeech.say` asks `speech.speak` for its `text`; `benchspeech.hear` asks
`speech.transcribe` for its `artifact_id`. Each answers with the capability's status and
output and `request_ms`: from the app's request to the gateway's answer, which is the
capability's whole path (gateway, store, engine) and nothing of the agent's tool call.
"""

from __future__ import annotations

import time
from typing import Any

from apps.sdk import RuntimeApp, declare_app, tool

APP_SCOPE = "benchspeech"
SAY = "benchspeech.say"
HEAR = "benchspeech.hear"
_ANSWER = {"type": "object"}


def _input(field: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {field: {"type": "string"}},
        "required": [field],
        "additionalProperties": False,
    }


@declare_app(
    app_scope=APP_SCOPE,
    version="1.0.0",
    title="Bench speech",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    required_features=["app.lifecycle.v1", "app.tools.v1", "capability.request.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
    capabilities=["speech.speak", "speech.transcribe"],
)
class BenchSpeechApp(RuntimeApp):
    @tool(
        SAY,
        input_schema=_input("text"),
        output_schema=_ANSWER,
        timeout_ms=120_000,
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def say(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Has the host speak the text into an artifact of this app."""
        return await self._timed("speech.speak", {"text": arguments["text"]})

    @tool(
        HEAR,
        input_schema=_input("artifact_id"),
        output_schema=_ANSWER,
        timeout_ms=120_000,
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def hear(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Has the host write one of this app's recordings out as text."""
        return await self._timed("speech.transcribe", {"artifact_id": arguments["artifact_id"]})

    async def _timed(self, capability: str, input: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        answer = await self.sdk.capabilities.request(capability, "the bench measures it", input)
        return {**answer, "request_ms": round((time.perf_counter() - started) * 1000, 1)}
