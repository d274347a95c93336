"""An installed app that keeps something of every kind the settings app shows: when its
instance starts it writes its session data twice (revision 2), makes one artifact and says
how it is (its health and one event). Its one tool, `keeper.note`, is what the agent sees
of it (or not, as the tool policy says).

What it kept is written to `kept.json` in its private directory once all of it is stored,
so a test knows the sizes to expect from the runtime's answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from apps.sdk import RuntimeApp, ToolCall, declare_app, tool

ARTIFACT: Final = b"a page the keeper keeps\n" * 40
NOTES: Final = ({"notes": ["first"]}, {"notes": ["first", "second"]})
HEALTH: Final = ("degraded", "its disk is nearly full")
KEPT: Final = "kept.json"
_ANY: Final = {"type": "object"}


def _kept() -> bool:
    return Path(KEPT).exists()


def _write_kept(kept: dict[str, Any]) -> None:
    partial = Path(KEPT + ".tmp")
    partial.write_text(json.dumps(kept))
    partial.replace(KEPT)


@declare_app(
    app_scope="keeper",
    version="1.0.0",
    title="Keeper",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    required_features=[
        "app.lifecycle.v1",
        "app.tools.v1",
        "app.session-data.v1",
        "artifact.create.v1",
    ],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class KeeperApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.sdk.lifecycle.on("start", self._keep)

    async def _keep(self, event: dict[str, Any]) -> None:
        if _kept():  # kept already, by an earlier start
            return
        instance = str(event["instance_id"])
        revision = 0
        for data in NOTES:
            revision = (await self.sdk.session_data.replace(data, revision))["revision"]
        reference = await self.sdk.artifacts.create(ARTIFACT, "text/plain", "the keeper's page")
        await self.sdk.diagnostics.health(*HEALTH)
        await self.sdk.diagnostics.event("info", "kept", {"revision": revision})
        _write_kept({"instance_id": instance, "revision": revision, "artifact": reference})

    @tool("keeper.note", input_schema=_ANY, output_schema=_ANY)
    async def note(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Says what it keeps."""
        return {"kept": True}
