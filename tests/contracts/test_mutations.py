"""Hypothesis: every mutation of a valid envelope gets a definite code, never a crash.

Each mutation is invalid by construction (it drops a field the contract requires for that
type, puts a value of another JSON type, breaks a grammar, exceeds a limit, ...) and names
the codes its kind of damage may produce, so the test proves three things at once: bad
input is refused, it is refused with the right code, and nothing but `ContractError`
ever escapes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts import (
    MAX_ENVELOPE_BYTES,
    MAX_JSON_DEPTH,
    MESSAGE_TYPES,
    SENDER_KINDS,
    Code,
    ContractError,
    LegacyContext,
    _ids,
    from_legacy,
    is_app_scope,
    is_instance_id,
    validate_envelope,
    validate_frame,
    validate_manifest,
    validate_message,
)
from contracts._ids import compile_pattern
from contracts._json import encode_json
from tests.contracts._data import valid_envelopes

VALID = valid_envelopes()
NAMES = sorted(VALID)
Draw = Callable[[st.SearchStrategy[Any]], Any]
Mutation = tuple[dict[str, Any] | str | bytes, frozenset[Code], str]

ROUTING = {"scope.app_scope", "scope.conversation_id", "scope.instance_id",
           "scope.operation_id", "target.app_scope", "target.instance_id"}  # fmt: skip
# Payload fields every payload of the type requires.
PAYLOAD_REQUIRED = {
    "lineup.message": ["text"],
    "lineup.task.progress": ["task_id", "status"],
    "lineup.interaction.request": ["interaction_id", "kind", "prompt"],
    "lineup.interaction.response": ["interaction_id", "kind"],
    "lineup.interaction.withdraw": ["interaction_id"],
    "lineup.surface.open": ["entrypoint"],
    "lineup.app.state.patch": ["patch"],
    "lineup.tool.invoke": ["method", "contract_version", "arguments"],
    "lineup.tool.activation_failed": ["code"],
    "lineup.tool.result": ["output"],
    "lineup.tool.error": ["code"],
    "lineup.inventory": ["revision"],
    "lineup.ui.action": ["action"],
    "lineup.host.intent": ["intent"],
    "lineup.runtime.status": ["state"],
}
# Expected JSON type of each scalar or container field that can be retyped.
FIELD_TYPES = {
    "v": int, "id": str, "type": str, "timestamp": str, "sender": dict, "sender.kind": str,
    "sender.id": str, "target": dict, "target.kind": str, "target.app_scope": str,
    "scope": dict, "scope.app_scope": str, "scope.conversation_id": str, "payload": dict,
}  # fmt: skip
ID_GRAMMARS = {
    "id": _ids.MESSAGE_ID_PATTERN,
    "correlation.reply_to": _ids.MESSAGE_ID_PATTERN,
    "correlation.call_id": _ids.CALL_ID_PATTERN,
    "correlation.inventory_revision": _ids.INVENTORY_REVISION_PATTERN,
    "scope.conversation_id": _ids.CONVERSATION_ID_PATTERN,
    "scope.operation_id": _ids.OPERATION_ID_PATTERN,
    "timestamp": _ids.TIMESTAMP_PATTERN,
}
SENDER_GRAMMARS = {
    "agent": _ids.AGENT_ID_PATTERN,
    "runtime": _ids.RUNTIME_ID_PATTERN,
    "user": _ids.USER_ID_PATTERN,
    "host": _ids.HOST_ID_PATTERN,
}


def _json_type(value: object) -> type:
    return bool if isinstance(value, bool) else type(value)


def _get(envelope: dict[str, Any], path: str) -> Any:
    node: Any = envelope
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _set(envelope: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = envelope
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def _drop(envelope: dict[str, Any], path: str) -> None:
    *parents, last = path.split(".")
    node = envelope
    for key in parents:
        node = node[key]
    del node[last]


def _codes(*codes: Code) -> frozenset[Code]:
    return frozenset(codes)


# JSON values the decoder accepts (ints within 64 bits, finite floats): what is wrong about
# them is only their type at the place they are put.
SMALL_INTS = st.integers(min_value=-(1 << 40), max_value=1 << 40)
SCALARS = st.one_of(
    st.booleans(),
    SMALL_INTS,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.lists(SMALL_INTS, max_size=3),
    st.dictionaries(st.text(max_size=5), SMALL_INTS, max_size=3),
)


def drop_required(envelope: dict[str, Any], draw: Draw) -> Mutation:
    spec = MESSAGE_TYPES[envelope["type"]]
    choices = {
        **{key: _codes(Code.INVALID_ENVELOPE) for key in
           ("v", "id", "type", "timestamp", "sender", "sender.kind", "sender.id",
            "target.kind", "payload")},
        **{key: _codes(Code.SCOPE_MISSING) for key in
           ("scope", "target", "scope.app_scope", "scope.conversation_id", "target.app_scope")},
    }  # fmt: skip
    if spec.needs_call_id:
        choices["correlation.call_id"] = _codes(Code.CORRELATION_MISSING)
    if spec.needs_inventory_revision:
        choices["correlation.inventory_revision"] = _codes(Code.CORRELATION_MISSING)
    if spec.needs_instance:
        # With the target still naming the instance, the two now disagree.
        choices["scope.instance_id"] = _codes(Code.SCOPE_MISSING, Code.SCOPE_MISMATCH)
    for key in PAYLOAD_REQUIRED.get(envelope["type"], []):
        if key in envelope["payload"]:
            choices[f"payload.{key}"] = _codes(Code.INVALID_PAYLOAD)
    present = sorted(path for path in choices if _get(envelope, path) is not None)
    path = draw(st.sampled_from(present))
    _drop(envelope, path)
    return envelope, choices[path], f"drop {path}"


def wrong_type(envelope: dict[str, Any], draw: Draw) -> Mutation:
    path = draw(st.sampled_from(sorted(FIELD_TYPES)))
    expected = FIELD_TYPES[path]
    value = draw(SCALARS.filter(lambda v: _json_type(v) is not expected))
    _set(envelope, path, value)
    if path in ROUTING or path in {"scope", "target"}:
        codes = _codes(Code.SCOPE_INVALID)
    elif path == "payload":
        codes = _codes(Code.INVALID_PAYLOAD)
    else:
        codes = _codes(Code.INVALID_ENVELOPE)
    return envelope, codes, f"{path} = {value!r}"


def oversize(envelope: dict[str, Any], draw: Draw) -> Mutation:
    extra = draw(st.integers(min_value=1, max_value=4096))
    envelope["pad"] = ""
    envelope["pad"] = "x" * (MAX_ENVELOPE_BYTES - len(encode_json(envelope)) + extra)
    return envelope, _codes(Code.TOO_LARGE), f"{extra} bytes over"


def deep_nesting(envelope: dict[str, Any], draw: Draw) -> Mutation:
    depth = draw(st.integers(min_value=MAX_JSON_DEPTH - 1, max_value=MAX_JSON_DEPTH + 200))
    value: Any = draw(st.sampled_from([0, "x", None, {}]))
    for _ in range(depth):
        value = [value] if draw(st.booleans()) else {"k": value}
    envelope["payload"]["deep"] = value  # payload is at depth 2, so this is > MAX
    return envelope, _codes(Code.TOO_DEEP), f"payload nested {depth} deep"


def unknown_sender_kind(envelope: dict[str, Any], draw: Draw) -> Mutation:
    kind = draw(st.text(max_size=10).filter(lambda k: k not in SENDER_KINDS))
    envelope["sender"]["kind"] = kind
    return envelope, _codes(Code.INVALID_ENVELOPE), f"sender.kind = {kind!r}"


def sender_not_allowed(envelope: dict[str, Any], draw: Draw) -> Mutation:
    spec = MESSAGE_TYPES[envelope["type"]]
    kind = draw(st.sampled_from(sorted(SENDER_KINDS - spec.senders)))
    ids = {"agent": "hermes", "runtime": "runtime", "user": "alice", "host": "web",
           "app": envelope["scope"]["app_scope"]}  # fmt: skip
    envelope["sender"] = {"kind": kind, "id": ids[kind]}
    return envelope, _codes(Code.SENDER_NOT_ALLOWED), f"sender.kind = {kind}"


SCOPES = st.from_regex(_ids.APP_SCOPE_PATTERN, fullmatch=True).filter(
    lambda s: len(s) <= _ids.APP_SCOPE_MAX_LENGTH
)


def mismatched_scope(envelope: dict[str, Any], draw: Draw) -> Mutation:
    own = envelope["scope"]["app_scope"]
    other = draw(SCOPES.filter(lambda s: s != own))
    if draw(st.booleans()):
        envelope["target"]["app_scope"] = other
        return envelope, _codes(Code.SCOPE_MISMATCH), f"target.app_scope = {other}"
    envelope["scope"]["instance_id"] = f"{other}:x1"
    return envelope, _codes(Code.SCOPE_MISMATCH), f"scope.instance_id = {other}:x1"


def _grammar(path: str, envelope: dict[str, Any]) -> Callable[[str], bool]:
    """The check a value at `path` must pass to be a valid id there."""
    if path == "scope.instance_id":
        return is_instance_id
    if path == "sender.id" and envelope["sender"]["kind"] == "app":
        return lambda text: is_app_scope(text) or is_instance_id(text)
    if path == "sender.id":
        pattern = compile_pattern(SENDER_GRAMMARS[envelope["sender"]["kind"]])
    else:
        pattern = compile_pattern(ID_GRAMMARS[path])
    return lambda text: pattern.fullmatch(text) is not None


def bad_id(envelope: dict[str, Any], draw: Draw) -> Mutation:
    path = draw(st.sampled_from([*sorted(ID_GRAMMARS), "sender.id", "scope.instance_id"]))
    valid = _grammar(path, envelope)
    text = draw(st.text(max_size=40).filter(lambda s: not valid(s)))
    _set(envelope, path, text)
    codes = _codes(Code.SCOPE_INVALID) if path in ROUTING else _codes(Code.INVALID_ENVELOPE)
    return envelope, codes, f"{path} = {text!r}"


def unsupported_version(envelope: dict[str, Any], draw: Draw) -> Mutation:
    version = draw(st.integers(min_value=-(1 << 31), max_value=1 << 31).filter(lambda v: v != 1))
    envelope["v"] = version
    return envelope, _codes(Code.UNSUPPORTED_VERSION), f"v = {version}"


def unknown_type(envelope: dict[str, Any], draw: Draw) -> Mutation:
    type_ = draw(st.text(max_size=40).filter(lambda t: t not in MESSAGE_TYPES))
    envelope["type"] = type_
    return envelope, _codes(Code.UNKNOWN_TYPE), f"type = {type_!r}"


KNOWN_FIELDS = {
    "v", "id", "type", "timestamp", "sender", "target", "scope", "correlation", "payload",
    "kind", "app_scope", "instance_id", "conversation_id", "operation_id",
}  # fmt: skip


def extra_field(envelope: dict[str, Any], draw: Draw) -> Mutation:
    where = draw(st.sampled_from(["", "sender", "target", "scope"]))
    node = envelope[where] if where else envelope
    key = draw(st.text(min_size=1, max_size=10).filter(lambda k: k not in KNOWN_FIELDS))
    node[key] = draw(SCALARS)
    return envelope, _codes(Code.INVALID_ENVELOPE), f"extra {where}.{key}"


MUTATIONS = [
    drop_required, wrong_type, oversize, deep_nesting, unknown_sender_kind, sender_not_allowed,
    mismatched_scope, bad_id, unsupported_version, unknown_type, extra_field,
]  # fmt: skip


@st.composite
def mutated_envelopes(draw: Draw) -> Mutation:
    envelope = copy.deepcopy(VALID[draw(st.sampled_from(NAMES))])
    original = copy.deepcopy(envelope)
    mutate = draw(st.sampled_from(MUTATIONS))
    result, codes, what = mutate(envelope, draw)
    # The mutation really changed something (compared as JSON, where true is not 1).
    assert json.dumps(result, sort_keys=True) != json.dumps(original, sort_keys=True), what
    encoding = draw(st.sampled_from(["mapping", "text", "bytes"]))
    if encoding == "mapping":
        return result, codes, what
    text = json.dumps(result, ensure_ascii=draw(st.booleans()))
    return (text if encoding == "text" else text.encode()), codes, f"{what} ({encoding})"


SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(mutated_envelopes())
def test_every_mutation_is_refused_with_its_code(case: Mutation) -> None:
    raw, codes, what = case
    try:
        validate_envelope(raw)
    except ContractError as exc:
        assert exc.code in codes, f"{what}: got {exc.code} ({exc.detail})"
    else:
        raise AssertionError(f"accepted an invalid envelope: {what}")


def _intact(envelope: dict[str, Any]) -> bool:
    containers = ("sender", "target", "scope", "payload")
    if not all(isinstance(envelope.get(key), dict) for key in containers):
        return False
    strings = (envelope.get("type"), envelope["sender"].get("kind"), envelope["sender"].get("id"),
               envelope["scope"].get("app_scope"))  # fmt: skip
    return (
        all(isinstance(value, str) for value in strings)
        and envelope["type"] in MESSAGE_TYPES
        and envelope["sender"]["kind"] in SENDER_KINDS
    )


@SETTINGS
@given(st.lists(st.sampled_from(MUTATIONS), min_size=2, max_size=4), st.data())
def test_stacked_mutations_are_still_refused(mutations: list[Any], data: st.DataObject) -> None:
    envelope = copy.deepcopy(VALID[data.draw(st.sampled_from(NAMES))])
    for mutate in mutations:
        if not _intact(envelope):
            break  # the next mutation needs structure an earlier one has broken
        result, _, _ = mutate(envelope, data.draw)
        assert isinstance(result, dict)
        envelope = result
    try:
        validate_envelope(envelope)
    except ContractError as exc:
        assert isinstance(exc.code, Code)
    else:
        raise AssertionError("accepted an envelope with several invalid changes")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(JSON, st.binary(max_size=200), st.text(max_size=200)))
def test_arbitrary_input_only_ever_raises_contract_error(raw: Any) -> None:
    validators: list[Callable[[Any], object]] = [
        validate_envelope,
        validate_message,
        lambda r: from_legacy(r, context=LegacyContext(conversation_id="conv-1")),
        validate_manifest,
        validate_frame,
    ]
    if not isinstance(raw, dict | bytes | str):
        raw = json.dumps(raw)
    for validator in validators:
        try:
            validator(raw)
        except ContractError as exc:
            assert isinstance(exc.code, Code)
