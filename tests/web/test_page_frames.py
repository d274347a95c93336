"""The page's WebSocket is a door into the user's side: every frame is checked before it
becomes a UI action. Hostile frames, on a real WebSocket with a real session, each get one
sentence back and reach nothing; the web host stays up; an action sent twice under the
same id is kept once. (A frame before the hello, and one past the size limit, close the
socket: `test_access`, in the browser.)"""

from __future__ import annotations

import http.client
import json
from typing import Any

import trio
from trio_websocket import WebSocketConnection, open_websocket_url

from actors.kernel import new_id
from actors.web_host import mint_key, read_endpoint
from tests.runtime.helpers import CONVERSATION, Stack, texts, wait_for

from .conftest import in_browser, start_web_runtime

HELLO = {
    "t": "hello",
    "page": "hostilepage01",
    "conversation": CONVERSATION,
    "since": 0,
    "open": [],
}


def _session_cookie(port: int, data_dir: Any) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", f"/?key={mint_key(data_dir)}")
    response = connection.getresponse()
    response.read()
    connection.close()
    return response.headers["Set-Cookie"].split(";", 1)[0]


def _send(text: str) -> dict[str, Any]:
    return {"kind": "send", "text": text}


def _act(app: str, given: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"t": "act", "client_id": new_id(), "app": app, "input": given, **extra}


HOSTILE: list[str | bytes | dict[str, Any]] = [
    "not json",
    "[]",
    {"t": "act", "client_id": "not-an-id", "app": "chat", "input": _send("x")},
    _act("settings", _send("x")),  # an app without a page here
    _act("chat", {**_send("x"), "conversation_id": "someone-elses"}),  # names a conversation
    _act("chat", _send("x"), session_id="operator"),  # claims a session
    _act("chat", _send("x" * 16_001)),
    _act("chat", _send("   ")),
    _act("chat", {"kind": "answer", "interaction_id": "q", "selected": ["a"], "confirmed": True}),
    _act("chat", {"kind": "answer", "interaction_id": "q", "confirmed": "yes"}),
    _act("app-registry", {"kind": "remove", "app_scope": "chat", "confirmed": False}),
    _act("app-registry", {"kind": "install", "bundle": "/etc/passwd"}),
    _act("app-registry", {"kind": "enable", "app_scope": "../../etc"}),
    {"t": "intent", "client_id": new_id(), "intent": "stop_runtime", "app_scope": "chat"},
    {"t": "hello", **{k: v for k, v in HELLO.items() if k != "t"}},  # hello twice
    b"\x00binary",
]


async def _receive(ws: WebSocketConnection, kind: str) -> dict[str, Any]:
    """The next frame of `kind` (the pushes of the page's view may come in between)."""
    with trio.fail_after(10):
        while True:
            frame: dict[str, Any] = json.loads(await ws.get_message())
            if frame["t"] == kind:
                return frame


async def test_hostile_frames_get_a_sentence_and_reach_nothing(stack: Stack) -> None:
    port = await start_web_runtime(stack)
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")
    await wait_for(lambda: texts(stack.timeline()) == ["hello"], 30, "the greeting in the chat")
    cookie = await in_browser(_session_cookie, port, stack.data_dir)
    url = f"ws://127.0.0.1:{port}/ws"
    headers = [(b"cookie", cookie.encode()), (b"origin", f"http://127.0.0.1:{port}".encode())]
    pid = (read_endpoint(stack.data_dir) or {})["pid"]

    async with open_websocket_url(url, extra_headers=headers) as ws:
        await ws.send_message(json.dumps(HELLO))
        view = await _receive(ws, "view")
        assert [item["text"] for item in view["items"]] == ["hello"]
        for frame in HOSTILE:
            message = frame if isinstance(frame, str | bytes) else json.dumps(frame)
            await ws.send_message(message)
            refusal = await _receive(ws, "refused")
            sentence = refusal["error"]
            assert sentence.endswith(".") and sentence.count(". ") == 0, (frame, sentence)
            assert "Traceback" not in sentence and "Error" not in sentence, (frame, sentence)

        # The same action sent twice is one message; the next one comes after it.
        twice = _act("chat", _send("only once"))
        for _ in range(2):
            await ws.send_message(json.dumps(twice))
            assert (await _receive(ws, "stored"))["client_id"] == twice["client_id"]
        await ws.send_message(json.dumps(_act("chat", _send("then this"))))
        await _receive(ws, "stored")

    await wait_for(
        lambda: "then this" in texts(stack.timeline()), 30, "the last message in the chat"
    )
    assert texts(stack.timeline(), "user") == ["only once", "then this"]

    # The audit's rows come by a path of their own, which may still be on its way.
    def audited_actions() -> list[dict[str, Any]] | None:
        actions = [a for a in stack.audit() if a["code"] == "ui.action"]
        return actions if sum(a["repeats"] for a in actions) >= 2 else None

    actions = await wait_for(audited_actions, 30, "both actions audited")
    assert sum(a["repeats"] for a in actions) == 2, actions

    await wait_for(
        lambda: {i["state"] for i in stack.timeline() if i["sender"] == "user"} == {"accepted"},
        30,
        "the AppServer to accept both",
    )
    # The web host is the one it was, and a new socket shows the same timeline.
    assert (read_endpoint(stack.data_dir) or {})["pid"] == pid
    async with open_websocket_url(url, extra_headers=headers) as ws:
        await ws.send_message(json.dumps(HELLO))
        whole = await _receive(ws, "view")
    assert [item["text"] for item in whole["items"]] == ["hello", "only once", "then this"]

    # A page that holds a position gets what changed since (here nothing), and again the
    # items it says may have changed in place.
    mine = whole["items"][1]["id"]
    for still_open, expected in (([], []), ([mine], [whole["items"][1]])):
        async with open_websocket_url(url, extra_headers=headers) as ws:
            await ws.send_message(json.dumps({**HELLO, "since": whole["pos"], "open": still_open}))
            assert (await _receive(ws, "view"))["items"] == expected
