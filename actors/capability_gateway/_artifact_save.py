"""The user saves an artifact: `capability_gateway.save_artifact`, from the user's side only
(the operator's `lineup artifacts save`, the host, the web host for its page's Save
button), never from an app. The user asked for it, so no consent card is shown.

The gateway reads the artifact through the store (`store.artifacts.read`) and saves its
bytes as the `file.save` provider does (`_files`): under `DATA_DIR/downloads/`, named after
its title or the name the user gave, made safe to show, never over another file. Saved
again (asked twice, or replayed after a crash), the same bytes under the same name are found
there and not written twice. Audited `artifact.saved`, naming the artifact, its app and the
name. Answer {`artifact_id`, `name`, `size`}; an id that names no artifact is
`artifact_not_found`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from actors.kernel import Actor, CallFailed, Message, derive_id, handles
from contracts import Code, ContractError

from . import _files
from .door import SaveArtifact


class ArtifactSaves(Actor):
    """The gateway's handler for the user's saves (mixed into `CapabilityGatewayActor`)."""

    data_dir: Path
    call_timeout: float
    write: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]

    @handles("capability_gateway.save_artifact")
    async def save_artifact(self, msg: Message[SaveArtifact]) -> Any:
        artifact_id = str(msg.body["artifact_id"])
        try:
            found = await self.call(
                "store",
                "store.artifacts.read",
                {"artifact_id": artifact_id},
                timeout=self.call_timeout * 5,
                id=derive_id(msg.id, 0),
            )
        except CallFailed as exc:
            if exc.code == Code.ARTIFACT_NOT_FOUND:
                raise ContractError(Code.ARTIFACT_NOT_FOUND, f"no artifact {artifact_id}") from None
            raise ContractError(Code.FAILED, "the store did not give the artifact") from None
        row = found["artifact"]
        name = _files.safe_name(str(msg.body.get("name") or row["title"]))
        saved = await trio.to_thread.run_sync(
            _files.save, _files.Folder.runtime(self.data_dir), name, bytes(found["data"]), msg.id
        )
        detail = f"{artifact_id} of {row['app_scope']} saved by the user as {saved}"
        audit = {"code": "artifact.saved", "detail": detail, "message_id": msg.id}
        await self.write({"audit": [audit]})
        return {"artifact_id": artifact_id, "name": saved, "size": row["size"]}
