"""One trivial, idempotent query tool: what a tool call costs when the handler costs nothing.

`bench.echo` answers with its argument at once, so every millisecond a call takes is the
runtime's path (and the AppServer's), not the tool's work.
"""

from __future__ import annotations

from typing import Any

from apps.sdk import RuntimeApp, declare_app, tool

APP_SCOPE = "benchtool"
METHOD = "bench.echo"


@declare_app(
    app_scope=APP_SCOPE,
    version="1.0.0",
    title="Bench tool",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    required_features=["app.lifecycle.v1", "app.tools.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class BenchToolApp(RuntimeApp):
    @tool(
        METHOD,
        input_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        },
        call_model="query",
        idempotent=True,
        risk="low",
        launch_policy={"launch": "if_needed", "focus": "background"},
    )
    async def echo(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Answers with its argument."""
        return {"n": arguments["n"]}
