"""The file a user chooses in the page for an app's `file.open` request, and the pages a
saved file is handed to.

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

**Download.** The capability gateway asks whether a page shows a conversation
(`web_host.pages`) and hands it a file an app saved for it (`web_host.download`: the name
it has in the runtime's downloads): each such page gets a `download` frame with a
`/saved/TOKEN` of that file (`_artifacts`) and clicks it.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from actors.contracts import Code, ContractError, FileWanted, check_size
from actors.kernel import Actor, CallFailed, CallTimeout

from ._access import cookie_name

if TYPE_CHECKING:
    from ._socket import PageSocket

log = logging.getLogger("lineup.web_host")

UPLOAD_PREFIX: Final = "/upload/"
CHOSEN_TIMEOUT_S: Final = 15.0
TOKEN_TTL_S: Final = 600.0  # a request's own deadline is at most ten minutes
MAX_TOKENS: Final = 256
MAX_NAME: Final = 1024
MAX_MEDIA_TYPE: Final = 255
# Which refusals of the gateway are the person's to fix, and how the page is told them.
_STATUS: Final = {
    Code.TOO_LARGE: 413,
    Code.UNSUPPORTED_MEDIA_TYPE: 415,
    Code.INVALID_STATE: 409,
}


def session_of(connection: HTTPConnection) -> str | None:
    """The session cookie a request or a socket carries (the access rule checked it)."""
    return connection.cookies.get(cookie_name(connection.url.port or 0))


@dataclass(frozen=True)
class _Upload:
    request_id: str  # the gateway's key of the request the file is for
    session: str
    wanted: FileWanted
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
        now = time.monotonic()
        while self.tokens and (
            len(self.tokens) >= MAX_TOKENS
            or now - next(iter(self.tokens.values())).minted > TOKEN_TTL_S
        ):
            self.tokens.popitem(last=False)
        token = secrets.token_urlsafe(24)
        self.tokens[token] = _Upload(request_id, session, wanted, now)
        self.counters["uploads_offered"] += 1
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
                403, str(Code.SENDER_NOT_ALLOWED), "Choose the file in the page that asks for it."
            )
        name = unquote(request.headers.get("x-file-name", ""))[:MAX_NAME] or "file"
        media_type = request.headers.get("content-type", "")[:MAX_MEDIA_TYPE]
        data = await self._read(request, upload.wanted, name)
        if isinstance(data, Response):
            return data
        body = {
            "request_id": upload.request_id,
            "name": name,
            "media_type": media_type,
            "data": data,
            "chooser": "web",
        }
        try:
            answer = await self.actor.call(
                "capability_gateway",
                "capability_gateway.file_chosen",
                body,
                timeout=CHOSEN_TIMEOUT_S,
            )
        except CallFailed as failed:
            status = _STATUS.get(failed.code)  # type: ignore[call-overload]
            if status is not None:
                return self._refused(status, failed.code, failed.detail)
            log.warning("a file chosen for %s: %s", upload.request_id, failed)
            late = isinstance(failed, CallTimeout)
            sentence = (
                "The runtime did not take the file in time: choose it again in a moment."
                if late
                else "The runtime could not take the file: choose it again."
            )
            return self._refused(503, failed.code, sentence)
        self.counters["uploads"] += 1
        return JSONResponse(dict(answer))

    async def _read(self, request: Request, wanted: FileWanted, name: str) -> bytes | Response:
        """The body, read as it streams and stopped past `wanted.max_bytes`; a refusal
        (`too_large`) for a longer one, declared or sent."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > wanted.max_bytes:
            return self._too_large(wanted, name, int(declared))
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > wanted.max_bytes:
                return self._too_large(wanted, name, len(data))
        return bytes(data)

    def _too_large(self, wanted: FileWanted, name: str, size: int) -> Response:
        try:
            check_size(wanted, name, size)
        except ContractError as refused:  # the sentence for the person, with the sizes
            return self._refused(413, str(refused.code), refused.detail)
        raise AssertionError("a size over the limit is refused")

    def _refused(self, status: int, code: str, sentence: str) -> Response:
        self.counters["uploads_refused"] += 1
        # The connection closes: a body not read to its end is not waited for.
        return JSONResponse(
            {"code": code, "error": sentence}, status, headers={"connection": "close"}
        )
