"""The user's side has a door of its own: `DATA_DIR/ui.sock`, apart from the operator's
control socket. A UI session acts through it and its action reaches the chat as the user's;
through it nothing but the host can be reached and nothing can be killed, redriven, sent,
started or stopped; the control socket no longer takes UI sessions. Real runtime, real
sockets."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import stat
from typing import Any

import pytest
import trio

from actors.kernel import ControlError, control_request, encode, ui_request

from .helpers import CONVERSATION, Stack, wait_for

SESSION = "web-u1"


def _action(text: str) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "app_scope": "chat",
        "input": {"kind": "send", "conversation_id": CONVERSATION, "text": text},
    }


def _stored_from(stack: Stack, *senders: str) -> list[tuple[str, str, str]]:
    """The mailbox rows (sender, recipient, type) stored from `senders`."""
    path = stack.data_dir / "mailbox.db"
    mailbox = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with contextlib.closing(mailbox):
        marks = ", ".join("?" for _ in senders)
        rows = mailbox.execute(
            f"SELECT sender, recipient, type FROM messages WHERE sender IN ({marks}) ORDER BY seq",
            senders,
        )
        return [tuple(row) for row in rows]


def _processes(stack: Stack) -> dict[str, tuple[int | None, int, str]]:
    assert stack.runtime is not None
    return {
        name: (record["pid"], record["restarts"], record["state"])
        for name, record in stack.runtime.actors().items()
    }


async def test_a_ui_session_acts_through_the_ui_socket(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    for name in ("ui.sock", "control.sock"):  # both doors are the user's own, nobody else's
        mode = (stack.data_dir / name).stat().st_mode
        assert stat.S_ISSOCK(mode), name
        assert stat.S_IMODE(mode) == 0o600, name

    status = ui_request(stack.data_dir, {"type": "status"})
    assert set(status) == {"state", "started_at"}  # what a UI shows, no more
    assert status["state"] == "running"
    opened = {"session_id": SESSION, "kind": "web"}
    ui_request(stack.data_dir, {"type": "host.session.open", "body": opened})
    sent = ui_request(stack.data_dir, {"type": "host.ui.action", "body": _action("via ui.sock")})
    assert isinstance(sent["id"], str) and sent["id"]

    with trio.fail_after(30):
        while True:
            message = await agent.receive()
            if message.sender.kind == "user" and message.type == "lineup.message":
                assert message.payload().text == "via ui.sock"
                break

    def in_the_chat() -> list[dict[str, Any]] | None:
        items = [item for item in stack.timeline() if item["text"] == "via ui.sock"]
        return items or None

    (item,) = await wait_for(in_the_chat, 30, "the action in the chat's timeline")
    assert item["sender"] == "user"
    audited = await wait_for(
        lambda: [r for r in stack.audit() if r["code"] == "ui.action"], 30, "the audit row"
    )
    assert [(r["source"], r["detail"]) for r in audited] == [("host", f"send in chat by {SESSION}")]
    # stored as the UI's, for the host only; the operator's sender never appears
    assert _stored_from(stack, "ui", "debug") == [
        ("ui", "host", "host.session.open"),
        ("ui", "host", "host.ui.action"),
    ]


REFUSED = [
    {"type": "kill", "name": "host"},
    {"type": "kill", "name": "app.chat"},
    {"type": "redrive", "id": "01J0000000000000000000000"},
    {"type": "send", "to": "host", "message_type": "host.ui.action", "body": _action("sent")},
    {"type": "send", "to": "store", "message_type": "store.audit", "body": {}},
    {"type": "start_child", "spec": {"name": "impostor", "target": "tests.runtime.impostor:X"}},
    {"type": "stop_child", "name": "app.chat"},
    {"type": "stop"},
    {"type": "ui", "message_type": "host.ui.action", "body": _action("ui")},
    {"type": "actors", "stats": True},
    {"type": "mailbox", "name": "store", "body": True},
    {"type": "trace"},
    {"type": "app.input", "body": _action("app")["input"]},
    {"type": "router.action", "body": {}},
]


async def test_the_ui_socket_refuses_all_but_host_messages(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    assert stack.runtime is not None
    before = _processes(stack)
    assert before["host"][0] is not None and before["app.chat"][0] is not None

    for request in REFUSED:
        with pytest.raises(ControlError, match=r"takes host\.\* messages and status") as refused:
            ui_request(stack.data_dir, request)
        assert "control socket" in str(refused.value), request
    # a host.* type the host's door does not open to a UI session: refused at the door
    with pytest.raises(ControlError, match="sender_not_allowed"):
        ui_request(stack.data_dir, {"type": "host.shutdown", "body": {}})
    # a malformed request or a broken frame is an error for its client only
    with pytest.raises(ControlError, match="type"):
        ui_request(stack.data_dir, {"type": 5})
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(stack.data_dir / "ui.sock"))
        sock.sendall(b"\xff\xff\xff\xff")
        assert b"error" in sock.recv(65536)

    # nothing happened: the same processes, nothing stored or started, still running
    assert stack.runtime.status()["state"] == "running"
    assert _processes(stack) == before
    assert "impostor" not in stack.runtime.actors()
    assert _stored_from(stack, "ui", "debug") == []
    assert stack.timeline() == []
    assert not [r for r in stack.audit() if r["code"].startswith(("ui.", "host."))]
    # and the UI socket still serves a UI session
    ui_request(stack.data_dir, {"type": "host.session.open", "body": {"session_id": SESSION}})
    await wait_for(lambda: _stored_from(stack, "ui") != [], 10, "the session's open stored")
    assert _stored_from(stack, "ui") == [("ui", "host", "host.session.open")]


async def test_the_control_socket_refuses_ui_sessions(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    assert stack.runtime is not None
    host_pid = stack.runtime.pid_of("host")
    request = {"type": "ui", "message_type": "host.ui.action", "body": _action("control")}
    with pytest.raises(ControlError, match=r"UI sessions use the UI socket \(DATA_DIR/ui\.sock\)"):
        control_request(stack.data_dir, request)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # the raw answer, too
        sock.settimeout(10)
        sock.connect(str(stack.data_dir / "control.sock"))
        sock.sendall(encode(request))
        assert b"ui.sock" in sock.recv(65536)
    assert _stored_from(stack, "ui", "debug") == []
    assert stack.timeline() == []
    assert stack.runtime.pid_of("host") == host_pid
    assert stack.runtime.status()["state"] == "running"
