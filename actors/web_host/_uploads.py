"""The file a user chooses in the page for an app's `file.open` request, what the user
records in the page for an app's `audio.record` request, and the pages a saved file is
handed to.

**Upload.** A `file.open` card in the page carries a file input. When the user picks a
file, the page asks its socket for an upload (`choose`, naming the card); the web host
checks that its conversation shows that card open and asking for a file, and mints a
one-time token bound to that request, to the page's session cookie and to what the request
takes at most (`upload` {`href`: `/upload/TOKEN`}). The page then POSTs the file's bytes
there, its name in `x-file-name` (percent-encoded) and its type as the browser declares it
in `content-type`. The web host takes the token (once: a second POST with it finds
nothing), checks that the POST comes from the web host's own page (`Origin`) under the
same session, refuses a declared length over the request's `max_bytes` before reading, and
reads the body as it streams, stopping at the first byte past it (`too_large`). What it
read goes to the capability gateway (`capability_gateway.file_chosen`), which decides the
type from the bytes and whether the request takes the file; its refusal is answered with
its code and one sentence (`too_large`, `unsupported_media_type`, `invalid_state` once the
card closed). Tokens not used are forgotten after `TOKEN_TTL_S` or past `MAX_TOKENS`.

**Recording.** An `audio.record` card in the page carries "Start recording". When the user
presses it, the page opens the browser's microphone, then asks its socket to record
(`record`, naming the card); the web host checks that its conversation shows that card open
and asking for a recording, and asks the capability gateway to start it
(`capability_gateway.record_start`: the user's yes), which answers how long and how much
the page may record. The web host mints a token the same way, bound to that size
(`recording` {`href`, `max_ms`, `max_bytes`}), and the page records, showing that it does.
When it stops, it POSTs what it recorded there, its type as the browser's recorder declares
it in `content-type` and why it stopped in `x-stopped`; the route checks and reads it as it
does a file and hands it to the gateway (`capability_gateway.recorded`), which reads the
recording from its bytes and keeps it as the app's artifact; its answer, the request's
outcome, is the POST's. The gateway keeps the recording's clock: at its limit, or when the
app leaves the foreground, it tells the web host (`web_host.recording.stop`), and each
page of the conversation hears `record_stop` for the card and sends what it has.

**Push-to-talk.** In the chat's audio mode the page's talk button records the user's
message for the chat: the page opens the microphone, then says `talk`; the web host checks
that its conversation is in audio mode and asks the gateway (`capability_gateway.talk`: the
user's press), which starts a recording of the chat's in that conversation. From there it
is a recording as above: a token bound to it, the same upload, the gateway's clock
(`record_stop` names its key, which `recording` carries as `request_id`).

**Download.** The capability gateway asks whether a page shows a conversation
(`web_host.pages`) and hands it a file an app saved for it (`web_host.download`: the name
it has in the runtime's downloads): each such page gets a `download` frame with a
`/saved/TOKEN` of that file (`_artifacts`) and clicks it.

An upload token is forgotten when used, after ten minutes (`TOKEN_TTL_S`) or past the last
256 (`MAX_TOKENS`). A POST from another origin or session is 403; past `max_bytes` 413
`too_large`; the gateway's refusals are 415 `unsupported_media_type`, 422
`invalid_payload` (a recording), 409 `invalid_state` (the card closed: a token of a closed
card fills nothing, not a card opened after it). The answer is JSON: {`status`, `code`?},
or {`code`, `error`} with the sentence the card shows under its input; the card stays open
for another file. A file is never a WebSocket frame: the socket keeps its 64 K bound.

The page records with `MediaRecorder`, Opus in WebM at 12 kb/s, a chunk a second, and
shows the recording bar under the header wherever the user is: for which app, the time
elapsed of the most allowed, and *Stop recording* (focused). It stops at Stop, at
`max_ms`, a chunk short of `max_bytes`, or at `record_stop`, and the card then says how it
went ("Recorded 4 s and handed it to voice."). For push-to-talk the bar says "Recording
your message", and the page says it writes out what was said until the user's message is
in the timeline.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any, Final, Protocol
from urllib.parse import unquote

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from actors.kernel import Actor, CallFailed, CallTimeout
from contracts import Code, ContractError, FileWanted, check_size

from ._access import cookie_name


class OpenPage(Protocol):
    """An open page, as this module uses it: it is sent frames (`_socket` has the rest)."""

    async def send(self, frame: dict[str, Any]) -> None: ...


log = logging.getLogger("lineup.web_host")

UPLOAD_PREFIX: Final = "/upload/"
CHOSEN_TIMEOUT_S: Final = 15.0
RECORDED_TIMEOUT_S: Final = 15.0
RECORD_START_TIMEOUT_S: Final = 5.0
STOPPED: Final = frozenset({"user", "limit", "background"})  # why a page's recording stopped
TOKEN_TTL_S: Final = 600.0  # a request's own deadline is at most ten minutes
MAX_TOKENS: Final = 256
MAX_NAME: Final = 1024
MAX_MEDIA_TYPE: Final = 255
# Which refusals of the gateway are the person's to fix, and how the page is told them.
_STATUS: Final = {
    Code.TOO_LARGE: 413,
    Code.UNSUPPORTED_MEDIA_TYPE: 415,
    Code.INVALID_PAYLOAD: 422,
    Code.INVALID_STATE: 409,
}


def session_of(connection: HTTPConnection) -> str | None:
    """The session cookie a request or a socket carries (the access rule checked it)."""
    return connection.cookies.get(cookie_name(connection.url.port or 0))


@dataclass(frozen=True)
class _Upload:
    request_id: str  # the gateway's key of the request the file or recording is for
    session: str
    max_bytes: int
    minted: float
    wanted: FileWanted | None = None  # what a file.open takes; None: a recording


class PagesAndUploads:
    """The page sockets by conversation, the upload route (`routes`) and its tokens."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor
        self.pages: dict[str, set[OpenPage]] = {}
        self.tokens: OrderedDict[str, _Upload] = OrderedDict()
        self.counters: Counter[str] = Counter()

    def statistics(self) -> dict[str, int]:
        return dict(self.counters)

    # -- pages --------------------------------------------------------------------------

    def opened(self, conversation: str, page: OpenPage) -> None:
        self.pages.setdefault(conversation, set()).add(page)

    def closed(self, conversation: str, page: OpenPage) -> None:
        shown = self.pages.get(conversation, set())
        shown.discard(page)
        if not shown:
            self.pages.pop(conversation, None)

    def showing(self, conversation: str) -> int:
        return len(self.pages.get(conversation, ()))

    async def hand_over(self, conversation: str, name: str, href: str) -> int:
        """Tell every page of `conversation` to download `href` as `name`; how many did."""
        handed = 0
        for page in list(self.pages.get(conversation, ())):
            try:
                await page.send({"t": "download", "name": name, "href": href})
            except Exception:  # a page that went meanwhile: the others still get it
                log.info("a page went before its download of %s", name)
                continue
            handed += 1
        self.counters["downloads_handed"] += handed
        return handed

    # -- uploads ------------------------------------------------------------------------

    def mint(self, request_id: str, session: str, wanted: FileWanted) -> str:
        """A one-time upload address for the file of request `request_id`."""
        self.counters["uploads_offered"] += 1
        return self._mint(_Upload(request_id, session, wanted.max_bytes, 0.0, wanted))

    async def start_recording(self, request_id: str, session: str) -> dict[str, Any]:
        """The user's yes to a recording, asked of the gateway: where the page sends it and
        how long and how much it may be. Raises `CallFailed` with the gateway's word."""
        answer = await self.actor.call(
            "capability_gateway",
            "capability_gateway.record_start",
            {"request_id": request_id},
            timeout=RECORD_START_TIMEOUT_S,
        )
        max_bytes = int(answer["max_bytes"])
        href = self._mint(_Upload(request_id, session, max_bytes, 0.0))
        self.counters["recordings_started"] += 1
        return {"href": href, "max_ms": int(answer["max_ms"]), "max_bytes": max_bytes}

    async def start_talk(self, conversation: str, talk_id: str, session: str) -> dict[str, Any]:
        """The user's push-to-talk in the chat's audio mode, asked of the gateway, which
        starts a recording for the chat in `conversation`: where the page sends it, how long
        and how much it may be, and the request's key (what `record_stop` names). Raises
        `CallFailed` with the gateway's word."""
        answer = await self.actor.call(
            "capability_gateway",
            "capability_gateway.talk",
            {"conversation_id": conversation, "talk_id": talk_id},
            timeout=RECORD_START_TIMEOUT_S,
        )
        max_bytes = int(answer["max_bytes"])
        request_id = str(answer["request_id"])
        href = self._mint(_Upload(request_id, session, max_bytes, 0.0))
        self.counters["talks_started"] += 1
        return {
            "href": href,
            "max_ms": int(answer["max_ms"]),
            "max_bytes": max_bytes,
            "request_id": request_id,
        }

    async def tell_stop(self, conversation: str, request_id: str) -> int:
        """Tell every page of `conversation` to stop recording for `request_id`."""
        told = 0
        for page in list(self.pages.get(conversation, ())):
            try:
                await page.send({"t": "record_stop", "interaction_id": request_id})
            except Exception:  # a page that went meanwhile: the others still hear it
                log.info("a page went before it heard to stop %s", request_id)
                continue
            told += 1
        self.counters["recording_stops"] += told
        return told

    def _mint(self, upload: _Upload) -> str:
        now = time.monotonic()
        while self.tokens and (
            len(self.tokens) >= MAX_TOKENS
            or now - next(iter(self.tokens.values())).minted > TOKEN_TTL_S
        ):
            self.tokens.popitem(last=False)
        token = secrets.token_urlsafe(24)
        self.tokens[token] = dataclasses.replace(upload, minted=now)
        return UPLOAD_PREFIX + token

    def routes(self) -> list[Any]:
        return [Route(UPLOAD_PREFIX + "{token}", self._upload, methods=["POST"])]

    async def _upload(self, request: Request) -> Response:
        upload = self.tokens.pop(request.path_params["token"], None)
        if upload is None or time.monotonic() - upload.minted > TOKEN_TTL_S:
            return self._refused(
                404, "invalid_state", "This upload is not expected any more: choose the file again."
            )
        own_page = request.headers.get("origin") == f"http://{request.headers.get('host')}"
        if not own_page or session_of(request) != upload.session:
            return self._refused(
                403, str(Code.SENDER_NOT_ALLOWED), "Use the page that asks for it."
            )
        if upload.wanted is None:
            return await self._recorded(request, upload)
        name = unquote(request.headers.get("x-file-name", ""))[:MAX_NAME] or "file"
        media_type = request.headers.get("content-type", "")[:MAX_MEDIA_TYPE]
        data = await self._read(request, upload, name)
        if isinstance(data, Response):
            return data
        body = {
            "request_id": upload.request_id,
            "name": name,
            "media_type": media_type,
            "data": data,
            "chooser": "web",
        }
        return await self._to_gateway(
            "capability_gateway.file_chosen",
            body,
            timeout=CHOSEN_TIMEOUT_S,
            counter="uploads",
            late="The runtime did not take the file in time: choose it again in a moment.",
            failed="The runtime could not take the file: choose it again.",
        )

    async def _recorded(self, request: Request, upload: _Upload) -> Response:
        """What the page recorded, to the gateway: its outcome, or a refusal."""
        data = await self._read(request, upload, "the recording")
        if isinstance(data, Response):
            return data
        body: dict[str, Any] = {
            "request_id": upload.request_id,
            "data": data,
            "media_type": request.headers.get("content-type", "")[:MAX_MEDIA_TYPE],
        }
        stopped = request.headers.get("x-stopped", "")
        if stopped in STOPPED:
            body["stopped"] = stopped
        return await self._to_gateway(
            "capability_gateway.recorded",
            body,
            timeout=RECORDED_TIMEOUT_S,
            counter="recordings",
            late="The runtime did not take the recording in time.",
            failed="The runtime could not take the recording.",
        )

    async def _to_gateway(
        self,
        message_type: str,
        body: dict[str, Any],
        *,
        timeout: float,
        counter: str,
        late: str,
        failed: str,
    ) -> Response:
        """An upload handed to the capability gateway: its answer for the page, or the
        gateway's refusal as an HTTP status with its sentence (`late` when it did not
        answer in time, `failed` when it could not take it)."""
        try:
            answer = await self.actor.call(
                "capability_gateway", message_type, body, timeout=timeout
            )
        except CallFailed as refusal:
            status = _STATUS.get(refusal.code)  # type: ignore[call-overload]
            if status is not None:
                return self._refused(status, refusal.code, refusal.detail)
            log.warning("%s for %s: %s", message_type, body["request_id"], refusal)
            sentence = late if isinstance(refusal, CallTimeout) else failed
            return self._refused(503, refusal.code, sentence)
        self.counters[counter] += 1
        return JSONResponse(dict(answer))

    async def _read(self, request: Request, upload: _Upload, name: str) -> bytes | Response:
        """The body, read as it streams and stopped past `upload.max_bytes`; a refusal
        (`too_large`) for a longer one, declared or sent."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > upload.max_bytes:
            return self._too_large(upload, name, int(declared))
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > upload.max_bytes:
                return self._too_large(upload, name, len(data))
        return bytes(data)

    def _too_large(self, upload: _Upload, name: str, size: int) -> Response:
        if upload.wanted is None:
            sentence = f"The recording is over the {upload.max_bytes // 1024} KiB it may be."
            return self._refused(413, str(Code.TOO_LARGE), sentence)
        try:
            check_size(upload.wanted, name, size)
        except ContractError as refused:  # the sentence for the person, with the sizes
            return self._refused(413, str(refused.code), refused.detail)
        raise AssertionError("a size over the limit is refused")

    def _refused(self, status: int, code: str, sentence: str) -> Response:
        self.counters["uploads_refused"] += 1
        # The connection closes: a body not read to its end is not waited for.
        return JSONResponse(
            {"code": code, "error": sentence}, status, headers={"connection": "close"}
        )
