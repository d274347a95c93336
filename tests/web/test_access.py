"""Who may use the web host: without the one-time key every route answers 403, the
WebSocket too; the key opens one browser session once, as an HttpOnly, SameSite=Strict
cookie, and leaves the address bar; a name that is not the web host's (DNS rebinding) or
a page of another origin, another loopback port included, cannot drive the WebSocket."""

from __future__ import annotations

import base64
import http.client
import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver

from actors.web_host import mint_key, read_endpoint
from tests.runtime.helpers import Stack

from .conftest import in_browser, open_page, start_web_runtime, until

ROUTES = ("/", "/app.js", "/style.css", "/ws", "/nothing-here")
HELLO = '{"t": "hello", "page": "accesspage01", "conversation": "conv-1", "since": 0, "open": []}'
# Opens the page's WebSocket, sends the frames, answers the close code.
CLOSED_BY = """
  const [frames, done] = [arguments[0], arguments[arguments.length - 1]];
  const ws = new WebSocket(`ws://${location.host}/ws`);
  ws.onopen = () => frames.forEach((frame) => ws.send(frame));
  ws.onclose = (event) => done(event.code);
"""


class Answer(NamedTuple):
    status: int
    headers: http.client.HTTPMessage
    body: bytes


def _get(port: int, path: str, headers: dict[str, str] | None = None) -> Answer:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    answer = Answer(response.status, response.headers, response.read())
    connection.close()
    return answer


def _upgrade(port: int, *, host: str, origin: str, cookie: str = "") -> int:
    """The status a WebSocket upgrade to /ws gets (101: opened)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET /ws HTTP/1.1",
        f"Host: {host}",
        f"Origin: {origin}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if cookie:
        lines.append(f"Cookie: {cookie}")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status_line = sock.recv(4096).split(b"\r\n", 1)[0]
    return int(status_line.split()[1])


@pytest.fixture
def other_origin() -> Iterator[tuple[ThreadingHTTPServer, list[int]]]:
    """A page on another loopback port that tries to open the web host's WebSocket."""
    target: list[int] = []

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            script = (
                f"const ws = new WebSocket('ws://127.0.0.1:{target[0]}/ws');"
                "ws.onopen = () => { document.title = 'opened'; };"
                "ws.onclose = () => {"
                " if (document.title !== 'opened') document.title = 'refused'; };"
            )
            body = f"<!doctype html><title>trying</title><script>{script}</script>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, target
    finally:
        server.shutdown()
        server.server_close()


async def test_the_key_opens_one_session_and_nothing_opens_without_it(
    stack: Stack, browser: WebDriver, other_origin: tuple[ThreadingHTTPServer, list[int]]
) -> None:
    port = await start_web_runtime(stack)
    host = f"127.0.0.1:{port}"

    # No key, no cookie, a wrong key: 403 everywhere, with the page's headers.
    for path in (*ROUTES, "/?key=not-a-key-it-was-given"):
        response = await in_browser(_get, port, path)
        assert response.status == 403, path
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert await in_browser(lambda: _upgrade(port, host=host, origin=f"http://{host}")) == 403

    # The key, in the browser: the session cookie, then the page without the key.
    pid = (read_endpoint(stack.data_dir) or {})["pid"]
    await in_browser(open_page, browser, stack.data_dir, "conv-1")
    assert browser.current_url == f"http://{host}/?conversation=conv-1"
    cookies = {c["name"]: c for c in browser.get_cookies()}
    session = cookies[f"lineup_web_{port}"]
    assert (session["httpOnly"], session["sameSite"]) == (True, "Strict")
    assert browser.execute_script("return document.cookie") == ""
    cookie = f"{session['name']}={session['value']}"

    # With the session: the pages, with their headers; the WebSocket from the web host's
    # own origin only, under the web host's own name only.
    page = await in_browser(_get, port, "/", {"Cookie": cookie})
    assert page.status == 200
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Referrer-Policy"] == "no-referrer"
    token = (stack.data_dir / ".runtime_token").read_bytes().strip()
    for path in ("/.runtime_token", "/%2e%2e/.runtime_token", "/static/../../.runtime_token"):
        served = await in_browser(_get, port, path, {"Cookie": cookie})
        assert served.status == 404 and token not in served.body, path
    origin = f"http://{host}"
    assert await in_browser(lambda: _upgrade(port, host=host, origin=origin, cookie=cookie)) == 101
    for other_host, other_origin_header in (
        (host, "http://127.0.0.1:1"),  # another port of loopback: the same site
        (host, "http://evil.example"),
        (f"evil.example:{port}", f"http://evil.example:{port}"),  # DNS rebinding
    ):
        status = await in_browser(
            lambda h=other_host, o=other_origin_header: _upgrade(
                port, host=h, origin=o, cookie=cookie
            )
        )
        assert status == 403, (other_host, other_origin_header)
    rebound = await in_browser(_get, port, "/", {"Cookie": cookie, "Host": f"evil.example:{port}"})
    assert rebound.status == 403

    # The page's own socket, from the browser: a frame before the hello, or one past the
    # size limit, closes it (policy violation, message too big); the web host stays.
    for frames in (['{"t": "act"}'], [HELLO, "x" * (300 * 1024)]):
        code = await in_browser(browser.execute_async_script, CLOSED_BY, frames)
        assert code == (1008 if len(frames) == 1 else 1009), frames
    assert (read_endpoint(stack.data_dir) or {})["pid"] == pid

    # A key is taken once: the same address in a second client opens nothing.
    key = mint_key(stack.data_dir)
    first = await in_browser(_get, port, f"/?key={key}")
    assert first.status == 303 and first.headers["Location"] == "/"
    assert (await in_browser(_get, port, f"/?key={key}")).status == 403

    # A page of another loopback port, in the browser that holds the session: its
    # WebSocket to the web host is refused.
    server, target = other_origin
    target.append(port)
    await in_browser(browser.get, f"http://127.0.0.1:{server.server_address[1]}/")
    title = await in_browser(until, browser, lambda d: d.title if d.title != "trying" else None)
    assert title == "refused"
