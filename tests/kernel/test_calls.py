"""`call` between actor processes: replies, definite errors, timeouts, repeated request ids."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import msgpack

from actors.kernel import new_id

from .conftest import MakeRuntime
from .helpers import child, outcomes, wait_until


def test_call_reply_error_and_duplicate_request_ids(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    calls_db = tmp_path / "caller.db"
    config = {
        "children": [
            child("caller", "Caller", config={"db": str(calls_db)}),
            child("echo", "Echo"),
            child("stalled", "Stalled", config={"resume_file": str(tmp_path / "never")}),
        ]
    }
    rt = make_runtime(config).start()
    repeated_id = new_id()  # a request id the caller sends twice

    def call(key: str, to: str, type: str, body: object = None, **extra: object) -> None:
        rt.send("caller", "do_call", {"key": key, "to": to, "type": type, "body": body, **extra})

    def outcome(key: str) -> tuple[str, object, str | None]:
        return wait_until(lambda: outcomes(calls_db).get(key), 20, f"the outcome of {key}")

    call("reply", "echo", "echo", {"nested": [1, 2, {"x": "y"}], "bytes": b"\x00\xff"})
    assert outcome("reply") == ("ok", {"nested": [1, 2, {"x": "y"}], "bytes": b"\x00\xff"}, None)

    call("refused", "echo", "echo", "refuse")
    assert outcome("refused") == ("failed", None, "permission_denied")

    call("unknown", "echo", "no.such.type")
    assert outcome("unknown") == ("failed", None, "unknown_type")

    # the same request id twice: the second gets the stored reply, not a second handling
    call("first", "echo", "tick", id=repeated_id)
    assert outcome("first") == ("ok", 1, None)
    call("again", "echo", "tick", id=repeated_id)
    assert outcome("again") == ("ok", 1, None)
    call("fresh", "echo", "tick")
    assert outcome("fresh") == ("ok", 2, None), "the repeated request was handled twice"

    # no reply within the deadline: a timeout, and the caller goes on
    call("late", "stalled", "item", {"n": 0, "sender": "caller"}, timeout=0.5)
    assert outcome("late") == ("failed", None, "timeout")
    call("after", "echo", "echo", "still here")
    assert outcome("after") == ("ok", "still here", None)


def test_a_call_answered_later_leaves_the_mailbox_free(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    calls_db = tmp_path / "caller.db"
    config = {
        "children": [
            child("caller", "Caller", config={"db": str(calls_db)}),
            child("deferring", "Deferring"),
        ]
    }
    rt = make_runtime(config).start()
    held_id = new_id()

    def outcome(key: str) -> tuple[str, object, str | None]:
        return wait_until(lambda: outcomes(calls_db).get(key), 20, f"the outcome of {key}")

    def held() -> int:
        found = rt.control({"type": "actors", "stats": True})["actors"]
        record = next(a for a in found if a["name"] == "deferring")
        return int((record.get("statistics") or {}).get("extra", {}).get("held", 0))

    rt.send("caller", "do_call", {"key": "held", "to": "deferring", "type": "hold", "id": held_id})
    wait_until(held, 20, "the call held")
    # Its handler returned without a reply: the next message is handled, and answers it.
    rt.send("deferring", "release", {"answer": 42})
    assert outcome("held") == ("ok", {"answer": 42}, None)
    # The first answer stands: a later one is dropped, a repeated request gets the first.
    rt.send("deferring", "release", {"answer": 43})
    rt.send("caller", "do_call", {"key": "again", "to": "deferring", "type": "hold", "id": held_id})
    assert outcome("again") == ("ok", {"answer": 42}, None)


def test_a_call_from_on_start_gets_its_reply(make_runtime: MakeRuntime, tmp_path: Path) -> None:
    calls_db = tmp_path / "caller.db"
    config = {
        "children": [
            child("echo", "Echo"),
            child("starter", "CallsOnStart"),
            child("caller", "Caller", config={"db": str(calls_db)}),
        ]
    }
    rt = make_runtime(config).start()  # returns once every child is ready
    rt.send("caller", "do_call", {"key": "k", "to": "starter", "type": "started"})
    got = wait_until(lambda: outcomes(calls_db).get("k"), 20, "the starter's answer")
    assert got == ("ok", "hello from on_start", None)


def test_an_apps_answer_is_read_by_the_rules_of_its_bodies(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    """What an app process answers a call with is bytes of its own making: its caller reads
    them as the door reads an app's bodies, and a refused answer is a definite CallFailed,
    never an exception out of `call` (any value may be at its top, though)."""
    calls_db = tmp_path / "caller.db"
    config = {
        "children": [
            child("caller", "Caller", config={"db": str(calls_db)}),
            child("app.rogue", "RawAnswers"),
        ]
    }
    rt = make_runtime(config).start()
    answers = {
        "a list": (msgpack.packb([1, "two"]), ("ok", [1, "two"], None)),
        "nil": (b"\xc0", ("ok", None, None)),
        "trailing bytes": (b"\x90\x90", ("failed", None, "invalid_payload")),
        "an extension type": (b"\xd4\x05\x00", ("failed", None, "invalid_payload")),
        "NaN": (b"\xcb" + struct.pack(">d", math.nan), ("failed", None, "invalid_payload")),
        "a duplicate key": (b"\x82\xa1k\x01\xa1k\x02", ("failed", None, "invalid_payload")),
        "nested 40 deep": (b"\x91" * 39 + b"\x90", ("failed", None, "too_deep")),
        "not msgpack": (b"\xc1", ("failed", None, "invalid_payload")),
    }
    for key, (raw, _) in answers.items():
        call = {"key": key, "to": "app.rogue", "type": "answer", "body": {"raw": raw}}
        rt.send("caller", "do_call", call)
    for key, (_, expected) in answers.items():
        outcome = wait_until(lambda k=key: outcomes(calls_db).get(k), 20, f"the outcome of {key}")
        assert outcome == expected, key
    assert rt.actors()["caller"]["restarts"] == 0
