"""Who may use the web host: the one browser session a one-time key opened, on loopback.

Every route, the WebSocket included, answers 403 unless the request

- names the web host itself in `Host` (`127.0.0.1:PORT` or `localhost:PORT`): a page of a
  name an attacker controls that resolves to loopback (DNS rebinding) gets nothing;
- carries the session cookie a one-time key was exchanged for (`/?key=KEY`: the key is
  taken, an HttpOnly, SameSite=Strict cookie is set and the browser is sent to `/`, so the
  key leaves the address bar and the history);
- and, for the WebSocket, comes from a page of the web host itself (`Origin`): another
  site, or another port of loopback (which is the same site, so the cookie would go
  along), cannot open it.

Every HTTP answer carries a strict Content-Security-Policy (scripts, styles and
connections of the web host only, nothing inline, no framing of the web host) and the
headers that keep its pages from being sniffed, framed or named as a referrer. An answer
under the paths of an artifact's bytes (`_artifacts`) carries `default-src 'none'; sandbox`
instead, a refusal included: what is there is never a page.

A refusal is 403 with one sentence: run `lineup web url`. `lineup run` prints `Web:
http://127.0.0.1:PORT/?key=…` and `lineup web url [--json]` mints another key for a running
runtime; each key is a file `DATA_DIR/web/keys/<sha256>` that the first request showing it
takes (unlinks), and what it gets is the cookie `lineup_web_PORT` (a session token kept as
`DATA_DIR/web/sessions/<sha256>`), then a 303 to `/`. Keys and sessions last for the
runtime's run. The policy is `default-src 'none'; script-src 'self'; style-src 'self';
connect-src 'self' ws://…; frame-ancestors 'none'; …` (nothing inline), with `nosniff`,
`Referrer-Policy: no-referrer`, `X-Frame-Options: DENY` and `Permissions-Policy:
microphone=(self), camera=(), geolocation=()` (the microphone is the page's own; a
surface's answers say `microphone=()`: no frame opens one). Two paths take `Host` alone:
`/surface/TOKEN/…` and `/surface-bridge.js`, which a sandboxed frame loads (its origin is
opaque, so its requests are cross-site and carry no cookie); a surface's token, minted for
one page socket, is its access, and its answers carry the surface's own policy
(`_surfaces`).
"""

from __future__ import annotations

from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlencode

from contracts import is_conversation_id

from ._artifacts import ARTIFACT_PREFIX, FILE_POLICY, SAVED_PREFIX
from ._state import new_session, session_valid, take_key
from ._surfaces import BRIDGE_PATH, SURFACE_PREFIX

Scope = dict[str, Any]
Receive = Any
Send = Any

SURFACE_PATHS: Final = (SURFACE_PREFIX, BRIDGE_PATH)
# Where the answers are bytes an app chose: never a document, never a script.
FILE_PATHS: Final = (ARTIFACT_PREFIX, SAVED_PREFIX)
FORBIDDEN: Final = (
    b"This page needs the address `lineup run` printed, opened once: run `lineup web url`"
    b" for a fresh one and open it in this browser.\n"
)


def cookie_name(port: int) -> str:
    # Cookies do not tell ports apart: each web host's cookie has its own name.
    return f"lineup_web_{port}"


def security_headers(port: int) -> list[tuple[bytes, bytes]]:
    origin = f"127.0.0.1:{port}"
    policy = (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "media-src 'self'; "  # the speech the page plays in the chat's audio mode
        f"connect-src 'self' ws://{origin} ws://localhost:{port}; frame-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return [
        (b"content-security-policy", policy.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"x-frame-options", b"DENY"),
        (b"cross-origin-opener-policy", b"same-origin"),
        (b"cross-origin-resource-policy", b"same-origin"),
        (b"cache-control", b"no-store"),
        # The microphone is the page's own (an app's recording, with the user's yes); no
        # frame in it gets one, nor a camera.
        (b"permissions-policy", b"microphone=(self), camera=(), geolocation=()"),
    ]


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return ""


class Guard:
    """ASGI middleware in front of every route: the access rule above."""

    def __init__(self, app: Any, data_dir: Path) -> None:
        self.app = app
        self.data_dir = data_dir
        self.port: int | None = None  # known once the server listens
        self.refused = 0

    def _hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    def _session(self, scope: Scope) -> bool:
        cookie = SimpleCookie()
        try:
            cookie.load(_header(scope, b"cookie"))
        except Exception:  # a malformed Cookie header is no session
            return False
        morsel = cookie.get(cookie_name(self.port or 0))
        return morsel is not None and session_valid(self.data_dir, morsel.value)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        host_ok = self.port is not None and _header(scope, b"host") in self._hosts()
        if scope["type"] == "websocket":
            origin_ok = _header(scope, b"origin") == f"http://{_header(scope, b'host')}"
            if host_ok and origin_ok and self._session(scope):
                await self.app(scope, receive, send)
            else:
                self.refused += 1
                await send({"type": "websocket.close", "code": 1008})  # a 403 before accept
            return
        if not host_ok:
            await self._forbidden(send)
            return
        if scope["path"].startswith(SURFACE_PATHS):
            # A surface's files and the bridge script are loaded by a sandboxed frame,
            # whose requests carry no cookie (its origin is opaque: they are cross-site).
            # The unguessable token in a surface's path is its access, and its answers
            # carry the surface's own policy (`_surfaces`), not the page's.
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if scope["path"] == "/" and "key" in query:
            await self._exchange(scope, query["key"][0], send, query.get("conversation"))
        elif self._session(scope):
            policy = FILE_POLICY if scope["path"].startswith(FILE_PATHS) else None
            await self.app(scope, receive, self._with_headers(send, policy))
        else:
            await self._forbidden(send)

    async def _exchange(
        self, scope: Scope, key: str, send: Send, conversation: list[str] | None
    ) -> None:
        """A one-time key for a session cookie, then `/` without the key (with the
        conversation the address named, when it is a conversation id)."""
        location = "/"
        if conversation and is_conversation_id(conversation[0]):
            location = "/?" + urlencode({"conversation": conversation[0]})
        headers = [(b"location", location.encode()), *security_headers(self.port or 0)]
        if not self._session(scope):
            if not take_key(self.data_dir, key):
                await self._forbidden(send)
                return
            token = new_session(self.data_dir)
            cookie = f"{cookie_name(self.port or 0)}={token}; HttpOnly; SameSite=Strict; Path=/"
            headers.append((b"set-cookie", cookie.encode()))
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def _forbidden(self, send: Send) -> None:
        self.refused += 1
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            *security_headers(self.port or 0),
        ]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": FORBIDDEN})

    def _with_headers(self, send: Send, policy: str | None = None) -> Send:
        """`send` with the security headers, the page's policy or `policy`, on the answer."""
        extra = security_headers(self.port or 0)
        if policy is not None:
            extra = [
                (k, policy.encode() if k == b"content-security-policy" else v) for k, v in extra
            ]

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                names = {key for key, _ in extra}
                kept = [(k, v) for k, v in message.get("headers", []) if k not in names]
                message = {**message, "headers": [*kept, *extra]}
            await send(message)

        return sending
