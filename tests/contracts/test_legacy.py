"""The `lineup.v1.*` adapter: golden pairs both ways, the rejection rules, no legacy leaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts import (
    LEGACY_APP_IDS,
    LEGACY_TYPES,
    MESSAGE_TYPES,
    Code,
    ContractError,
    LegacyContext,
    from_legacy,
    to_legacy,
    validate_envelope,
    validate_message,
)
from contracts._legacy import LegacyMessage
from tests.contracts._data import files, ids, load

PAIRS = files("legacy/pairs/*.json")
REJECTED = files("legacy/rejected/*.json")
UNMAPPABLE = files("legacy/unmappable/*.json")
LEGACY_ONLY_FIELDS = {"ts", "from", "seq", "conversation_id", "app"}


@pytest.mark.parametrize("path", PAIRS, ids=ids(PAIRS))
def test_legacy_maps_to_its_canonical_twin(path: Path) -> None:
    case = load(path)
    envelope = from_legacy(case["legacy"], context=LegacyContext(**case["context"]))
    assert envelope.to_dict() == case["canonical"]
    # The canonical twin is a valid envelope on its own, and survives JSON both ways.
    assert validate_envelope(envelope.to_json()) == envelope


@pytest.mark.parametrize(
    "path", [p for p in PAIRS if load(p)["direction"] == "both"], ids=lambda p: p.stem
)
def test_canonical_maps_back_to_the_same_legacy_message(path: Path) -> None:
    case = load(path)
    legacy = to_legacy(validate_envelope(case["canonical"]))
    assert legacy == case["legacy"]
    assert LegacyMessage.model_validate(legacy).type == case["legacy"]["type"]


def test_every_legacy_type_has_a_golden_pair() -> None:
    covered = {load(path)["legacy"]["type"] for path in PAIRS}
    assert covered == set(LEGACY_TYPES)
    assert set(LEGACY_TYPES.values()) <= set(MESSAGE_TYPES)


@pytest.mark.parametrize("path", PAIRS, ids=ids(PAIRS))
def test_apps_never_see_legacy_fields(path: Path) -> None:
    case = load(path)
    canonical = from_legacy(case["legacy"], context=LegacyContext(**case["context"])).to_dict()
    assert not LEGACY_ONLY_FIELDS & set(canonical)
    if isinstance(canonical["payload"], dict):
        assert "app" not in canonical["payload"]
        assert "surface_id" not in canonical["payload"]
    assert not any(app_id in str(canonical) for app_id in LEGACY_APP_IDS)


@pytest.mark.parametrize("path", REJECTED, ids=ids(REJECTED))
def test_invalid_legacy_is_rejected_not_guessed(path: Path) -> None:
    case = load(path)
    with pytest.raises(ContractError) as caught:
        from_legacy(case["legacy"], context=LegacyContext(**case["context"]))
    assert caught.value.code is Code(case["code"])


@pytest.mark.parametrize("path", UNMAPPABLE, ids=ids(UNMAPPABLE))
def test_envelopes_without_a_legacy_form_are_refused(path: Path) -> None:
    case = load(path)
    envelope = validate_envelope(case["canonical"])
    with pytest.raises(ContractError) as caught:
        to_legacy(envelope)
    assert caught.value.code is Code.LEGACY_UNMAPPABLE


def test_missing_conversation_comes_from_the_context_only() -> None:
    case = load(files("legacy/pairs/message.current-conversation.json")[0])
    legacy = case["legacy"]
    assert "conversation_id" not in legacy
    mapped = from_legacy(legacy, context=LegacyContext(conversation_id="conv-b"))
    assert mapped.scope.conversation_id == "conv-b"
    with pytest.raises(ContractError) as caught:
        from_legacy(legacy, context=LegacyContext())
    assert caught.value.code is Code.SCOPE_MISSING
    # An explicit conversation wins over the current one.
    explicit = {**legacy, "conversation_id": "conv-a"}
    mapped = from_legacy(explicit, context=LegacyContext(conversation_id="conv-b"))
    assert mapped.scope.conversation_id == "conv-a"


def test_validate_message_accepts_both_forms() -> None:
    case = load(files("legacy/pairs/surface.open.json")[0])
    from_legacy_form = validate_message(case["legacy"])
    from_canonical_form = validate_message(case["canonical"])
    assert from_legacy_form == from_canonical_form
    # The canonical validator alone refuses legacy input: only the adapter maps it.
    with pytest.raises(ContractError) as caught:
        validate_envelope(case["legacy"])
    assert caught.value.code is Code.INVALID_ENVELOPE


def test_legacy_user_tool_call_is_still_not_an_agent_call() -> None:
    case = load(files("legacy/pairs/tool.call.json")[0])
    legacy = {**case["legacy"], "from": {"role": "user", "id": "alice"}}
    with pytest.raises(ContractError) as caught:
        from_legacy(legacy, context=LegacyContext())
    assert caught.value.code is Code.SENDER_NOT_ALLOWED
