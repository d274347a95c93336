"""RuntimeEnvelope v1: golden round trips, the rejection table, entry kinds, limits."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from contracts import (
    ENTRY_TYPES,
    MAX_ENVELOPE_BYTES,
    MAX_JSON_DEPTH,
    MESSAGE_TYPES,
    SENDER_KINDS,
    Code,
    ContractError,
    Correlation,
    EntryKind,
    RuntimeEnvelope,
    parse_payload,
    validate_envelope,
)
from contracts._json import encode_json
from tests.contracts._data import files, ids, load, valid_envelopes

VALID = files("envelopes/valid/*.json")
REJECTED = files("envelopes/rejected/*.json")
SENDER_IDS = {"agent": "hermes", "runtime": "runtime", "user": "alice", "host": "terminal"}


def _code_of(raw: Any) -> Code:
    with pytest.raises(ContractError) as caught:
        validate_envelope(raw)
    return caught.value.code


@pytest.mark.parametrize("path", VALID, ids=ids(VALID))
def test_golden_envelope_round_trips(path: Path) -> None:
    raw = path.read_bytes()
    env = validate_envelope(raw)
    # model → JSON is the fixture itself (canonical form) ...
    assert env.to_dict() == load(path)
    # ... and JSON → model gives the same model, by every entry point.
    assert RuntimeEnvelope.model_validate_json(env.to_json()) == env
    assert validate_envelope(env.to_json()) == env
    assert validate_envelope(env.to_dict()) == env
    assert validate_envelope(raw.decode()) == env


def test_every_catalogue_type_has_a_golden_fixture() -> None:
    covered = {envelope["type"] for envelope in valid_envelopes().values()}
    assert covered == set(MESSAGE_TYPES)


@pytest.mark.parametrize("path", REJECTED, ids=ids(REJECTED))
def test_rejected_fixture_gets_its_code(path: Path) -> None:
    case = load(path)
    assert _code_of(case["input"]) == Code(case["code"])


def test_typed_payload_matches_the_type() -> None:
    envelope = validate_envelope(valid_envelopes()["tool.invoke"])
    payload = parse_payload(envelope)
    assert (payload.method, payload.contract_version) == ("board.create", "1")
    assert envelope.entry_kind is EntryKind.AGENT_TOOL_CALL


def _with_sender(envelope: dict[str, Any], kind: str) -> dict[str, Any]:
    mutated = copy.deepcopy(envelope)
    # A well-formed sender of that kind; an app speaks only in its own scope.
    sender_id = mutated["scope"]["app_scope"] if kind == "app" else SENDER_IDS[kind]
    mutated["sender"] = {"kind": kind, "id": sender_id}
    return mutated


@pytest.mark.parametrize("type_", sorted(MESSAGE_TYPES))
def test_only_the_listed_sender_kinds_may_send_a_type(type_: str) -> None:
    spec = MESSAGE_TYPES[type_]
    base = next(env for env in valid_envelopes().values() if env["type"] == type_)
    for kind in sorted(SENDER_KINDS):
        mutated = _with_sender(base, kind)
        if kind in spec.senders:
            assert validate_envelope(mutated).sender.kind == kind
        else:
            assert _code_of(mutated) is Code.SENDER_NOT_ALLOWED, kind


def test_a_user_action_can_never_be_an_agent_tool_call() -> None:
    # Whatever target the user picks, a tool call from a user is refused.
    call = valid_envelopes()["tool.invoke"]
    for target_kind in ("app", "runtime"):
        mutated = _with_sender(call, "user")
        mutated["target"]["kind"] = target_kind
        assert _code_of(mutated) is Code.SENDER_NOT_ALLOWED


def test_entry_kinds_have_disjoint_senders_and_distinct_audit_types() -> None:
    specs = [MESSAGE_TYPES[ENTRY_TYPES[kind]] for kind in EntryKind]
    assert len(specs) == 3
    for index, spec in enumerate(specs):
        for other in specs[index + 1 :]:
            assert not spec.senders & other.senders
    assert len({spec.audit_type for spec in specs}) == 3
    assert MESSAGE_TYPES[ENTRY_TYPES[EntryKind.AGENT_TOOL_CALL]].senders == {"agent"}


def _padded(size: int) -> dict[str, Any]:
    """A valid envelope whose canonical encoding is exactly `size` bytes."""
    envelope = copy.deepcopy(valid_envelopes()["ui.action.user"])
    envelope["payload"]["input"]["pad"] = ""
    envelope["payload"]["input"]["pad"] = "x" * (size - len(encode_json(envelope)))
    assert len(encode_json(envelope)) == size
    return envelope


def test_size_limit_is_exact() -> None:
    at_limit = _padded(MAX_ENVELOPE_BYTES)
    assert validate_envelope(at_limit)
    assert validate_envelope(encode_json(at_limit))
    over = _padded(MAX_ENVELOPE_BYTES + 1)
    assert _code_of(over) is Code.TOO_LARGE
    assert _code_of(encode_json(over)) is Code.TOO_LARGE
    assert _code_of(encode_json(over).decode()) is Code.TOO_LARGE


def _nested(depth: int) -> dict[str, Any]:
    envelope = copy.deepcopy(valid_envelopes()["ui.action.user"])
    value: Any = "leaf"
    # envelope (1) → payload (2) → input (3) → lists below it.
    for _ in range(depth - 3):
        value = [value]
    envelope["payload"]["input"]["deep"] = value
    return envelope


def test_depth_limit_is_exact() -> None:
    assert validate_envelope(_nested(MAX_JSON_DEPTH))
    assert _code_of(_nested(MAX_JSON_DEPTH + 1)) is Code.TOO_DEEP
    assert _code_of(json.dumps(_nested(MAX_JSON_DEPTH + 1))) is Code.TOO_DEEP


def test_pathological_nesting_is_too_deep_not_a_crash() -> None:
    text = "[" * 100_000 + "]" * 100_000  # under the size limit, far over the depth
    assert _code_of(text) is Code.TOO_DEEP
    circular: dict[str, Any] = {}
    circular["self"] = circular
    assert _code_of(circular) is Code.TOO_DEEP


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"\xff\xfe{}", Code.INVALID_JSON),
        ('{"v": NaN}', Code.INVALID_JSON),
        ("1" * 5000, Code.INVALID_JSON),
        ('"\\ud800"', Code.INVALID_JSON),
        ("[]", Code.INVALID_ENVELOPE),
        ("{}", Code.INVALID_ENVELOPE),
        ({"v": 1, "when": object()}, Code.INVALID_JSON),
        ({"v": 1, "n": float("inf")}, Code.INVALID_JSON),
        ({"v": 1, "n": 1 << 70}, Code.INVALID_JSON),
        ({"v": 1, 5: "int key"}, Code.INVALID_JSON),
        (12, Code.INVALID_JSON),
    ],
    ids=[
        "not-utf8", "nan", "huge-int-text", "lone-surrogate", "array", "empty-object",
        "python-object", "infinity", "huge-int", "int-key", "not-text",
    ],
)  # fmt: skip
def test_non_json_input_gets_a_code(raw: Any, code: Code) -> None:
    assert _code_of(raw) is code


def test_mapping_input_is_copied_not_aliased() -> None:
    source = copy.deepcopy(valid_envelopes()["ui.action.user"])
    envelope = validate_envelope(source)
    source["payload"]["input"]["text"] = "changed after validation"
    assert envelope.payload["input"]["text"] == "Retro"  # type: ignore[index,call-overload]


def test_null_optionals_read_as_absent_and_vanish_from_canonical_form() -> None:
    base = valid_envelopes()["message.agent-to-chat"]
    with_nulls = copy.deepcopy(base)
    with_nulls["scope"]["instance_id"] = None
    with_nulls["correlation"]["reply_to"] = None
    assert validate_envelope(with_nulls).to_dict() == base
    status = valid_envelopes()["runtime.status"]
    empty = RuntimeEnvelope.model_validate({**status, "correlation": Correlation()})
    assert empty == RuntimeEnvelope.model_validate({**status, "correlation": {"sequence": None}})
    assert empty.correlation is None and empty.to_dict() == status


def test_validated_envelope_is_frozen() -> None:
    envelope = validate_envelope(valid_envelopes()["message.agent-to-chat"])
    with pytest.raises(ValueError, match="frozen"):
        envelope.type = "lineup.tool.invoke"
