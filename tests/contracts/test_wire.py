"""The AppServer wire frames: golden sessions, malformed frames, version negotiation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contracts import (
    CLIENT_FRAMES,
    PROTOCOL_VERSION,
    ROLE_SENDER_KINDS,
    SERVER_FRAMES,
    Batch,
    Code,
    ContractError,
    Deliver,
    Hello,
    Submit,
    encode_frame,
    negotiate_version,
    validate_frame,
    validate_message,
)
from contracts._wire import FRAME_MODELS
from tests.contracts._data import files, ids, load

SESSIONS = files("wire/sessions/*.json")
INVALID = files("wire/invalid/*.json")


def _messages(frame: Any) -> list[dict[str, Any]]:
    if isinstance(frame, Batch):
        return [item.message for item in frame.items]
    if isinstance(frame, Deliver | Submit):
        return [frame.message]
    return []


@pytest.mark.parametrize("path", SESSIONS, ids=ids(SESSIONS))
def test_golden_session_frames_are_valid_and_round_trip(path: Path) -> None:
    for step in load(path):
        frame = validate_frame(json.dumps(step["frame"]), sent_by=step["from"])
        # model → JSON → model, and the fixture is the encoding minus defaults.
        assert validate_frame(encode_frame(frame)) == frame
        assert step["frame"].items() <= json.loads(encode_frame(frame)).items()
        for message in _messages(frame):
            envelope = validate_message(message)
            if isinstance(frame, Submit):
                # A session submits only what its role may send.
                role = load(path)[0]["frame"]["role"]
                expected_ok = envelope.sender.kind in ROLE_SENDER_KINDS[role]
                result = next(
                    s["frame"] for s in load(path)
                    if s["frame"]["frame"] == "submit_result"
                    and s["frame"]["idempotency_key"] == frame.idempotency_key
                )  # fmt: skip
                assert (result["status"] == "accepted") == expected_ok


def test_sessions_show_sync_then_backlog_end_then_live() -> None:
    kinds = [step["frame"]["frame"] for step in load(files("wire/sessions/runtime.json")[0])]
    assert kinds[:2] == ["hello", "welcome"]
    assert kinds.index("sync") < kinds.index("backlog_end") < kinds.index("deliver")


@pytest.mark.parametrize("path", INVALID, ids=ids(INVALID))
def test_invalid_frame_gets_its_code(path: Path) -> None:
    case = load(path)
    with pytest.raises(ContractError) as caught:
        validate_frame(case["frame"], sent_by=case["sent_by"])
    assert caught.value.code is Code(case["code"])


def test_every_frame_kind_has_a_direction_and_a_golden_example() -> None:
    assert set(FRAME_MODELS) == CLIENT_FRAMES | SERVER_FRAMES
    seen = {step["frame"]["frame"] for path in SESSIONS for step in load(path)}
    assert seen == set(FRAME_MODELS)


def test_version_negotiation_picks_the_highest_common_version() -> None:
    assert negotiate_version([2, 1]) == PROTOCOL_VERSION
    assert negotiate_version([1, 2, 3], supported=[1, 2]) == 2
    with pytest.raises(ContractError) as caught:
        negotiate_version([2, 3])
    assert caught.value.code is Code.UNSUPPORTED_VERSION
    assert "[1]" in caught.value.detail


def test_hello_peer_id_follows_the_role() -> None:
    base = {"frame": "hello", "protocol_versions": [1], "token": "t"}
    assert isinstance(validate_frame({**base, "role": "runtime", "peer_id": "Laptop-1"}), Hello)
    with pytest.raises(ContractError) as caught:
        validate_frame({**base, "role": "agent", "peer_id": "Laptop-1"})
    assert caught.value.code is Code.INVALID_FRAME


def test_frames_have_their_own_size_limit() -> None:
    frame = {"frame": "deliver", "seq": 1, "message": {"pad": "x" * (1024 * 1024)}}
    with pytest.raises(ContractError) as caught:
        validate_frame(frame)
    assert caught.value.code is Code.TOO_LARGE
