"""What a page sends the runtime beside its socket: a recording the user made in it for an
app's `audio.record` request, and the pages each conversation is shown in.

**Recording.** An `audio.record` card in the page carries "Start recording". When the user
presses it, the page opens the browser's microphone, then asks its socket to record
(`record`, naming the card); the web host checks that its conversation shows that card
open and asking for a recording, and asks the capability gateway to start it
(`capability_gateway.record_start`: the user's yes), which answers how long and how much
the page may record. The web host mints a one-time token bound to that request, to the
page's session cookie and to that size (`recording` {`href`: `/upload/TOKEN`, `max_ms`,
`max_bytes`}), and the page records, showing that it does. When it stops, it POSTs what it
recorded there, its type as the browser's recorder declares it in `content-type` and why it
stopped in `x-stopped`. The web host takes the token (once: a second POST with it finds
nothing), checks that the POST comes from the web host's own page (`Origin`) under the same
session, refuses a declared length over the size before reading, and reads the body as it
streams, stopping at the first byte past it (`too_large`). What it read goes to the gateway
(`capability_gateway.recorded`), which reads the recording from its bytes and keeps it as
the app's artifact; its answer, the request's outcome, is the POST's. Tokens not used are
forgotten after `TOKEN_TTL_S` or past `MAX_TOKENS`.

**Stop.** The gateway keeps the recording's clock: at its limit, or when the app leaves the
foreground, it tells the web host (`web_host.recording.stop`), and each page of the
conversation hears `record_stop` for the card and sends what it has.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from actors.contracts import Code
from actors.kernel import Actor, CallFailed, CallTimeout

from ._access import cookie_name

if TYPE_CHECKING:
    from ._socket import PageSocket

log = logging.getLogger("lineup.web_host")

UPLOAD_PREFIX: Final = "/upload/"
RECORDED_TIMEOUT_S: Final = 15.0
RECORD_START_TIMEOUT_S: Final = 5.0
TOKEN_TTL_S: Final = 600.0  # a recording lasts at most two minutes: far past it
MAX_TOKENS: Final = 256
MAX_MEDIA_TYPE: Final = 255
STOPPED: Final = frozenset({"user", "limit", "background"})
# Which refusals of the gateway are the person's to know, and how the page is told them.
_STATUS: Final = {
    Code.TOO_LARGE: 413,
    Code.INVALID_PAYLOAD: 422,
    Code.INVALID_STATE: 409,
}


def session_of(connection: HTTPConnection) -> str | None:
    """The session cookie a request or a socket carries (the access rule checked it)."""
    return connection.cookies.get(cookie_name(connection.url.port or 0))


@dataclass(frozen=True)
class _Upload:
    request_id: str  # the gateway's key of the request the recording is for
    session: str
    max_bytes: int
    minted: float


class PagesAndUploads:
    """The page sockets by conversation, the upload route (`routes`) and its tokens."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor
        self.pages: dict[str, set[PageSocket]] = {}
        self.tokens: OrderedDict[str, _Upload] = OrderedDict()
        self.counters: Counter[str] = Counter()

    def statistics(self) -> dict[str, int]:
        return dict(self.counters)

    # -- pages --------------------------------------------------------------------------

    def opened(self, conversation: str, page: PageSocket) -> None:
        self.pages.setdefault(conversation, set()).add(page)

    def closed(self, conversation: str, page: PageSocket) -> None:
        shown = self.pages.get(conversation, set())
        shown.discard(page)
        if not shown:
            self.pages.pop(conversation, None)

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

    # -- recordings -----------------------------------------------------------------------

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
        href = self.mint(request_id, session, max_bytes)
        self.counters["recordings_started"] += 1
        return {"href": href, "max_ms": int(answer["max_ms"]), "max_bytes": max_bytes}

    def mint(self, request_id: str, session: str, max_bytes: int) -> str:
        """A one-time upload address for the recording of request `request_id`."""
        now = time.monotonic()
        while self.tokens and (
            len(self.tokens) >= MAX_TOKENS
            or now - next(iter(self.tokens.values())).minted > TOKEN_TTL_S
        ):
            self.tokens.popitem(last=False)
        token = secrets.token_urlsafe(24)
        self.tokens[token] = _Upload(request_id, session, max_bytes, now)
        return UPLOAD_PREFIX + token

    def routes(self) -> list[Any]:
        return [Route(UPLOAD_PREFIX + "{token}", self._upload, methods=["POST"])]

    async def _upload(self, request: Request) -> Response:
        upload = self.tokens.pop(request.path_params["token"], None)
        if upload is None or time.monotonic() - upload.minted > TOKEN_TTL_S:
            return self._refused(404, "invalid_state", "This recording is not expected any more.")
        own_page = request.headers.get("origin") == f"http://{request.headers.get('host')}"
        if not own_page or session_of(request) != upload.session:
            return self._refused(
                403, str(Code.SENDER_NOT_ALLOWED), "Record in the page that asks for it."
            )
        data = await self._read(request, upload.max_bytes)
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
        try:
            answer = await self.actor.call(
                "capability_gateway",
                "capability_gateway.recorded",
                body,
                timeout=RECORDED_TIMEOUT_S,
            )
        except CallFailed as failed:
            status = _STATUS.get(failed.code)  # type: ignore[call-overload]
            if status is not None:
                return self._refused(status, failed.code, failed.detail)
            log.warning("a recording for %s: %s", upload.request_id, failed)
            late = isinstance(failed, CallTimeout)
            sentence = (
                "The runtime did not take the recording in time."
                if late
                else "The runtime could not take the recording."
            )
            return self._refused(503, failed.code, sentence)
        self.counters["recordings"] += 1
        return JSONResponse(dict(answer))

    async def _read(self, request: Request, max_bytes: int) -> bytes | Response:
        """The body, read as it streams and stopped past `max_bytes`; a refusal
        (`too_large`) for a longer one, declared or sent."""
        declared = request.headers.get("content-length", "")
        too_large = f"The recording is over the {max_bytes // 1024} KiB it may be."
        if declared.isdigit() and int(declared) > max_bytes:
            return self._refused(413, str(Code.TOO_LARGE), too_large)
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > max_bytes:
                return self._refused(413, str(Code.TOO_LARGE), too_large)
        return bytes(data)

    def _refused(self, status: int, code: str, sentence: str) -> Response:
        self.counters["uploads_refused"] += 1
        # The connection closes: a body not read to its end is not waited for.
        return JSONResponse(
            {"code": code, "error": sentence}, status, headers={"connection": "close"}
        )
