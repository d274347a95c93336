"""Artifacts in the page: a picture's preview, and the user's Save handed to the browser.

**Whose.** The page's session (its cookie, checked by `_access.Guard` as for every route)
gets an artifact only in the conversation that shows it: `/artifact/CONVERSATION/ID` is
answered when a tool call of that conversation handed the agent that artifact, as the chat's
log records it (the reference is the tool router's, which it checked is the calling app's
own), or when it is the chat's own speech of an agent message there or the recording a
spoken message of the user's there was written out from (audio mode). An artifact an app
made and never handed over, or handed over in another conversation, is not served under
this conversation's name, whatever the id; nor is one whose file is not the whole of what
the store recorded.

**Preview.** Only an image whose bytes are PNG, JPEG, WebP or GIF is answered, with the
content type its bytes say (the declared media type is the app's word, and SVG is never
shown inline), `nosniff` and `default-src 'none'; sandbox`: whatever else the bytes are
(HTML, SVG, script), no browser renders them as a document or runs them. Sound is answered
the same way, for the page's `<audio>` to play (the speech of audio mode): a WAV, WebM or Ogg
by its first bytes, with that type. Anything else is 415 and the page shows the line without
a picture.

**Save.** A page's `save` frame (`_socket`) names an artifact of its conversation; the web
host asks the capability gateway to save it (`capability_gateway.save_artifact`: the user's
own save, as `lineup artifacts save` asks it, so no consent card), and answers with the
name it was saved under in downloads and `/saved/TOKEN`, a token for that one save, valid
while this process runs. Its answer is the bytes the gateway saved (the artifact's, checked
against the store's record) as an attachment of type `application/octet-stream`, under that
name. The page names ids only, never a path.

A file an app saved (`file.save`) for a page that shows its conversation is handed over the
same way (`offer_file`): the gateway wrote it into the runtime's downloads, and
`/saved/TOKEN` answers that file, opened by its one-component name without following a
link.

A preview is asked for when the declared type is PNG, JPEG, WebP or GIF (an `<img>` with
the title as its alt text) and answered for at most 256 KiB. An HTML page or an SVG with a
script that says it is a PNG is never a document in the browser
(`tests/web/test_surface_tools.py`). A save token is kept for the last 256 saves. The
download is answered with `content-disposition: attachment; filename="…";
filename*=UTF-8''…` (the name percent-encoded; in the plain form anything outside printable
ASCII, `"`, backslash and `%` replaced by `_`). The page's line then says `Saved as
“NAME”.` with a link to download it again; a refusal (the app removed, the gateway not
answering in time, four saves of the page already under way) is one sentence beside the
button, never in the page's toast. What was served and refused is counted in the web
host's statistics (`artifacts`).
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import trio
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from actors.kernel import Actor, CallFailed, CallTimeout, derive_id
from actors.store import is_artifact_id, read_artifact_data
from apps.chat import app_dir
from apps.sdk import EventLog
from contracts import Code, is_conversation_id

from ._inputs import Refused

log = logging.getLogger("lineup.web_host")

ARTIFACT_PREFIX: Final = "/artifact/"
SAVED_PREFIX: Final = "/saved/"
SAVE_TIMEOUT_S: Final = 15.0
MAX_SAVED: Final = 256  # saves whose download a page may still ask for
DOWNLOADS_DIR: Final = "downloads"  # the runtime's downloads, where the gateway saves
MAX_SAVED_FILE: Final = 1024 * 1024  # far over what an app can send in one message
# An artifact is at most 240 KiB (`ArtifactLimits`); a preview is refused past this.
MAX_PREVIEW_BYTES: Final = 256 * 1024
# The file's first bytes that say which picture it is: nothing else is shown inline.
_SIGNATURES: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
# An answer with bytes an app chose: never a document, never a script, never sniffed.
FILE_POLICY: Final = "default-src 'none'; sandbox"
_FILE_HEADERS: Final = {
    "content-security-policy": FILE_POLICY,
    "x-content-type-options": "nosniff",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}


def sniff_audio(data: bytes) -> str | None:
    """The media type of a sound the page may play, from its bytes; None for anything else."""
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data.startswith(b"\x1a\x45\xdf\xa3"):
        return "audio/webm"
    if data.startswith(b"OggS"):
        return "audio/ogg"
    return None


def sniff_image(data: bytes) -> str | None:
    """The media type of a picture the page may show, from its bytes; None for anything
    else (SVG included: it is a document that can carry script)."""
    for signature, media_type in _SIGNATURES:
        if data.startswith(signature):
            return media_type
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def content_disposition(name: str) -> str:
    """`attachment` with `name` as RFC 6266 has it: `filename*` in UTF-8, percent-encoded,
    and a plain `filename` for older readers with everything outside printable ASCII, the
    quote and the backslash replaced."""
    plain = "".join(ch if " " <= ch <= "~" and ch not in '"\\%' else "_" for ch in name)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name, safe='')}"


def shown_in(data_dir: Path, conversation: str, artifact_id: str) -> bool:
    """Whether a tool call of `conversation` handed the agent `artifact_id` (the rule
    above), from the chat's log, read-only."""
    if not (is_conversation_id(conversation) and is_artifact_id(artifact_id)):
        return False
    path = app_dir(data_dir)
    if not (path / "app.db").exists():
        return False
    log_ = EventLog(path, readonly=True)
    try:
        return log_.names_artifact(conversation, artifact_id)
    finally:
        log_.close()


def _of_conversation(
    data_dir: Path, conversation: str, artifact_id: str
) -> tuple[dict[str, Any], bytes] | None:
    if not shown_in(data_dir, conversation, artifact_id):
        return None
    return artifact_if_readable(data_dir, artifact_id)


def artifact_if_readable(data_dir: Path, artifact_id: str) -> tuple[dict[str, Any], bytes] | None:
    """As `read_artifact_data`; None, said in the log, where the store's file cannot be read
    (the page is told the file is not here, never given an error page)."""
    try:
        return read_artifact_data(data_dir, artifact_id)
    except sqlite3.Error as exc:
        log.warning("artifact %s: the store's file could not be read: %s", artifact_id, exc)
        return None


def read_saved_file(data_dir: Path, name: str) -> bytes | None:
    """The file `name` of the runtime's downloads, opened without following a link, or
    None (no such file, not a plain name, or too large to be one the gateway saved)."""
    if not name or "/" in name or name in (".", ".."):
        return None
    try:
        folder = os.open(data_dir / DOWNLOADS_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as saved:
        data = saved.read(MAX_SAVED_FILE + 1)
    return data if len(data) <= MAX_SAVED_FILE else None


@dataclass(frozen=True)
class _Saved:
    name: str
    artifact_id: str | None = None  # None: the file `name` of the runtime's downloads


class Artifacts:
    """The artifact routes (`routes`) and the user's saves (`save`)."""

    def __init__(self, actor: Actor, data_dir: Path) -> None:
        self.actor = actor
        self.data_dir = data_dir
        self.saved: OrderedDict[str, _Saved] = OrderedDict()  # token -> the save
        self.counters: Counter[str] = Counter()

    def statistics(self) -> dict[str, int]:
        return dict(self.counters)

    def routes(self) -> list[Any]:
        return [
            Route(ARTIFACT_PREFIX + "{conversation}/{artifact_id}", self._preview),
            Route(SAVED_PREFIX + "{token}", self._download),
        ]

    async def _preview(self, request: Request) -> Response:
        conversation = request.path_params["conversation"]
        artifact_id = request.path_params["artifact_id"]
        found = await trio.to_thread.run_sync(
            _of_conversation, self.data_dir, conversation, artifact_id
        )
        if found is None:
            self.counters["previews_refused"] += 1
            return _refusal("No such picture in this conversation.", 404)
        data = found[1]
        media_type = sniff_image(data) or sniff_audio(data)
        if media_type is None or len(data) > MAX_PREVIEW_BYTES:
            self.counters["previews_refused"] += 1
            return _refusal("This file is not a picture the page shows: save it instead.", 415)
        self.counters["previews" if media_type.startswith("image/") else "plays"] += 1
        return Response(data, media_type=media_type, headers=_FILE_HEADERS)

    async def _download(self, request: Request) -> Response:
        saved = self.saved.get(request.path_params["token"])
        data = None
        if saved is not None and saved.artifact_id is not None:
            found = await trio.to_thread.run_sync(
                artifact_if_readable, self.data_dir, saved.artifact_id
            )
            data = found[1] if found is not None else None
        elif saved is not None:
            data = await trio.to_thread.run_sync(read_saved_file, self.data_dir, saved.name)
        if saved is None or data is None:
            self.counters["downloads_refused"] += 1
            return _refusal("This download is not here any more: press Save again.", 404)
        self.counters["downloads"] += 1
        headers = {**_FILE_HEADERS, "content-disposition": content_disposition(saved.name)}
        return Response(data, media_type="application/octet-stream", headers=headers)

    def offer_file(self, name: str) -> str:
        """Where a page downloads the file `name` the gateway saved in the runtime's
        downloads for it."""
        return self._keep(_Saved(name))

    def _keep(self, saved: _Saved) -> str:
        token = secrets.token_urlsafe(24)
        self.saved[token] = saved
        while len(self.saved) > MAX_SAVED:
            self.saved.popitem(last=False)
        return SAVED_PREFIX + token

    async def save(self, conversation: str, artifact_id: str, client_id: str) -> dict[str, str]:
        """Have the gateway save an artifact of `conversation` into downloads: the name it
        has there and where the page downloads it; `Refused` with one sentence otherwise."""
        if not await trio.to_thread.run_sync(shown_in, self.data_dir, conversation, artifact_id):
            self.counters["saves_refused"] += 1
            raise Refused("This file is not in this conversation: reload the page.")
        try:
            answer = await self.actor.call(
                "capability_gateway",
                "capability_gateway.save_artifact",
                {"artifact_id": artifact_id},
                timeout=SAVE_TIMEOUT_S,
                id=derive_id(client_id, 0),  # the same click sent twice saves once
            )
        except CallFailed as failed:
            self.counters["saves_refused"] += 1
            log.warning("the save of %s: %s", artifact_id, failed)
            raise Refused(_save_failure(failed)) from None
        name = str(answer["name"])
        href = self._keep(_Saved(name, artifact_id))
        self.counters["saves"] += 1
        return {"name": name, "href": href}


def _save_failure(failed: CallFailed) -> str:
    if failed.code == Code.ARTIFACT_NOT_FOUND:
        return "This file is gone: the app that made it was removed."
    if isinstance(failed, CallTimeout) or failed.code == "dead_letter":
        return "The runtime did not save it in time: try again in a moment."
    return "The runtime could not save this file: try again, or run `lineup artifacts list`."


def _refusal(sentence: str, status: int) -> Response:
    return PlainTextResponse(sentence, status, headers=_FILE_HEADERS)
