"""The chat app, able to read an artifact when the user's side asks it to: a UI action
`{"kind": "read_artifact", "artifact_id": ...}` (through the host, as any input) makes it
read the artifact through its SDK and write what it got to `artifact_reads.json` in its
private directory (the SHA-256 of the bytes and the metadata, or the refusal's code)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from apps.chat import ChatApp
from apps.sdk import CallFailed

READS = "artifact_reads.json"


class ChatReader(ChatApp):
    async def on_input(self, body: dict[str, Any]) -> None:
        if body.get("kind") != "read_artifact":
            await super().on_input(body)
            return
        artifact_id = str(body.get("artifact_id"))
        try:
            found = await self.sdk.artifacts.read(artifact_id)
            outcome = {
                **found["artifact"],
                "read_sha256": hashlib.sha256(found["data"]).hexdigest(),
            }
        except CallFailed as refused:
            outcome = {"refused": str(refused.code)}
        path = Path(self.config["app_dir"]) / READS
        reads = json.loads(path.read_text()) if path.exists() else {}
        reads[artifact_id] = outcome
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(reads))
        partial.replace(path)
