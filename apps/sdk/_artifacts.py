"""Artifacts for apps: bytes with a media type and a title, kept by the runtime's store.

- `sdk.artifacts.create(data, media_type, title, conversation_id=None)`: the store keeps
  the bytes under an id of its own and answers with the reference
  {`artifact_id`, `title`, `media_type`, `size`}: what a tool result hands the agent
  (`{"artifact": reference}` in its output), never a path;
- `sdk.artifacts.read(artifact_id)`: {`artifact`: its metadata, `data`: its bytes}, for
  the app's own artifacts (the chat app reads any);
- `sdk.artifacts.list()`: the metadata of the app's own artifacts, oldest first.

Whose an artifact is, is the app process that asked (the supervisor stamps it); a
conversation named must be one an instance of the app is in. A refusal raises `CallFailed`
with its code: `too_large` (over the bytes of one artifact), `quota_exceeded` (the app's
count or total bytes), `invalid_payload` (a media type not of the form `type/subtype`, a
title empty, too long or with control characters), `ownership_mismatch` (a conversation
or an artifact not the app's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ._app_core import AppCore

STORE: Final = "store"
TIMEOUT: Final = 30.0  # a create writes and fsyncs a file and a row


class ArtifactsAPI:
    def __init__(self, app: AppCore) -> None:
        self._app = app

    async def create(
        self, data: bytes, media_type: str, title: str, conversation_id: str | None = None
    ) -> dict[str, Any]:
        """Keep `data` as an artifact of this app; its reference."""
        body: dict[str, Any] = {"data": bytes(data), "media_type": media_type, "title": title}
        if conversation_id is not None:
            body["conversation_id"] = conversation_id
        reference = await self._call("store.artifacts.create", body)
        return dict(reference)

    async def read(self, artifact_id: str) -> dict[str, Any]:
        """{`artifact`: metadata, `data`: bytes} of one of this app's artifacts."""
        reply = await self._call("store.artifacts.read", {"artifact_id": artifact_id})
        return {"artifact": dict(reply["artifact"]), "data": bytes(reply["data"])}

    async def list(self) -> list[dict[str, Any]]:
        """This app's artifacts' metadata, oldest first (asked a page at a time)."""
        rows: list[dict[str, Any]] = []
        page: dict[str, Any] = {}
        while True:
            reply = await self._call("store.artifacts.list", page)
            rows.extend(dict(row) for row in reply["artifacts"])
            if reply["next"] is None:
                return rows
            page = {"after": reply["next"]}

    async def _call(self, type_: str, body: dict[str, Any]) -> Any:
        # Inside a handler the id derives from the message handled: a replayed handler's
        # create is the same request, which the store answers with the same artifact.
        app = self._app
        return await app.call(STORE, type_, body, timeout=TIMEOUT, id=app._ids.next())
