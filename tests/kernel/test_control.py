"""The control socket: stable records for the debug CLI, and no way for a client to take
the runtime down (a malformed request or a client that hangs up gets it an error, no more).
"""

from __future__ import annotations

import socket
import stat

import pytest

from actors.kernel import ControlError, encode

from .conftest import MakeRuntime
from .helpers import Runtime, child, wait_until

BAD_REQUESTS = [
    {"type": "no_such_request"},
    {"type": "mailbox", "name": "e", "limit": None},
    {"type": "mailbox", "name": "nobody"},
    {"type": "send", "to": "e", "message_type": 5},
    {"type": "send", "to": "Not A Name", "message_type": "echo"},
    {"type": "send", "to": "e", "message_type": "kernel.actor_failed"},
    {"type": "start_child", "spec": "not a spec"},
    {"type": "start_child", "spec": {"name": "e", "target": "tests.kernel.sample_actors:Echo"}},
    {"type": "stop_child", "name": "nobody"},
    {"type": "redrive", "id": None},
    {"type": "redrive", "id": "NO-SUCH-ID"},
    {"type": "kill", "name": ["e"]},
    {"type": "kill"},
    {"type": "ui", "message_type": "host.ui.action", "body": {}},  # UI sessions: ui.sock
]


def test_records_have_stable_fields_and_the_socket_is_private(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": [child("e", "Echo")]}).start()
    mode = (rt.data_dir / "control.sock").stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600
    status = rt.status()
    assert status["state"] == "running"
    assert status["pid"] == rt.pid
    assert status["degraded"] == []
    record = rt.wait_actor("e")
    assert {"name", "pid", "state", "restarts", "pending", "inflight", "dead"} <= set(record)
    stats = rt.control({"type": "actors", "stats": True})["actors"][0]["statistics"]
    assert (stats["name"], stats["pid"]) == ("e", record["pid"])


@pytest.fixture(scope="module")
def one_runtime(make_module_runtime: MakeRuntime) -> Runtime:
    """One runtime takes every bad request in turn: each must leave it as it was."""
    return make_module_runtime({"children": [child("e", "Echo")]}).start()


@pytest.mark.parametrize("request_", BAD_REQUESTS, ids=lambda r: str(r)[:60])
def test_a_bad_request_gets_an_error_and_the_runtime_lives_on(
    one_runtime: Runtime, request_: dict[str, object]
) -> None:
    rt = one_runtime
    with pytest.raises(ControlError):
        rt.control(request_)
    assert rt.status()["state"] == "running"
    assert rt.wait_actor("e")["restarts"] == 0
    assert rt.mailbox("e") == [], "a rejected message was stored"


def test_clients_that_hang_up_do_not_take_the_runtime_down(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": [child("e", "Echo")]}).start()
    path = str(rt.data_dir / "control.sock")
    for request in ({"type": "actors", "stats": True}, {"type": "status"}, {"type": "trace"}):
        for _ in range(20):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(path)
                sock.sendall(encode(request))
                # close with a reset (linger 0) before the answer is read
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall(b"\xff\xff\xff\xff")  # an oversize length prefix, then hang up

    def answers() -> bool:
        try:  # the listen backlog may still be full of the connections above
            return bool(rt.status()["state"] == "running")
        except ControlError:
            return False

    wait_until(answers, 5, "the runtime to answer again")
    assert rt.alive
    assert rt.wait_actor("e")["restarts"] == 0


def test_a_trace_client_that_hangs_up_on_a_quiet_runtime_is_let_go(
    make_runtime: MakeRuntime,
) -> None:
    rt = make_runtime({"children": [child("e", "Echo")]}).start()
    path = str(rt.data_dir / "control.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall(encode({"type": "trace"}))
        wait_until(lambda: rt.status()["tracers"] == 1, 10, "the trace to be registered")
    # nothing flows, so no trace line will ever fail to send: only the hang-up can end it
    wait_until(lambda: rt.status()["tracers"] == 0, 10, "the trace to end with its client")
