"""Id grammars and the message-id generator."""

from __future__ import annotations

import pytest

from contracts import (
    RUNTIME_GLOBAL_CONVERSATION,
    MessageIdFactory,
    derive_message_id,
    instance_app_scope,
    is_app_scope,
    is_conversation_id,
    is_instance_id,
    message_id_time_ms,
    new_message_id,
    utc_timestamp,
)
from contracts._ids import (
    CORE_APP_SCOPES,
    MESSAGE_ID_PATTERN,
    SCOPE_RUNTIME,
    compile_pattern,
)

MESSAGE_ID = compile_pattern(MESSAGE_ID_PATTERN)


def test_the_runtimes_own_scopes_are_valid_scopes() -> None:
    assert all(is_app_scope(scope) for scope in (*CORE_APP_SCOPES, SCOPE_RUNTIME))


@pytest.mark.parametrize(
    "scope",
    ["", "Chat", "chat!", "-chat", "chat-", "draw--guess", "1chat", "chat\n", "a" * 65,
     "lineup.chat", "white_board", "com.acme.board"],
)  # fmt: skip
def test_bad_scopes_are_refused(scope: str) -> None:
    assert not is_app_scope(scope)


def test_conversation_grammar_reserves_the_colon_for_the_runtime() -> None:
    assert is_conversation_id(RUNTIME_GLOBAL_CONVERSATION)
    assert is_conversation_id("conv-8f14e45f")
    assert not is_conversation_id("runtime:other")
    assert not is_conversation_id("a" * 129)


def test_instance_ids_name_their_app() -> None:
    assert is_instance_id("draw-and-guess:game-001")
    assert instance_app_scope("draw-and-guess:game-001") == "draw-and-guess"
    assert not is_instance_id("game-001")
    assert not is_instance_id("Draw:game")
    assert not is_instance_id("chat:game 1")


def test_message_ids_are_ulids_strictly_increasing_within_a_millisecond() -> None:
    factory = MessageIdFactory()
    minted = [factory.new(now_ms=1_786_010_400_000) for _ in range(2000)]
    assert minted == sorted(minted)
    assert len(set(minted)) == len(minted)
    assert all(MESSAGE_ID.fullmatch(value) for value in minted)
    assert message_id_time_ms(minted[0]) == 1_786_010_400_000
    # A clock that steps back does not break the order either.
    assert factory.new(now_ms=1_786_010_399_000) > minted[-1]


def test_fresh_ids_are_valid_and_ordered_by_time() -> None:
    first, second = new_message_id(), new_message_id()
    assert MESSAGE_ID.fullmatch(first) and first < second
    with pytest.raises(ValueError, match="48 bits"):
        MessageIdFactory().new(now_ms=1 << 48)


def test_derived_ids_are_deterministic_valid_and_distinct() -> None:
    parent = new_message_id()
    derived = [derive_message_id(parent, index) for index in range(50)]
    assert derived == [derive_message_id(parent, index) for index in range(50)]
    assert len(set(derived)) == 50
    assert all(MESSAGE_ID.fullmatch(value) for value in derived)
    assert all(message_id_time_ms(value) == message_id_time_ms(parent) for value in derived)
    with pytest.raises(ValueError, match="message id"):
        derive_message_id("not-an-id", 0)


def test_timestamps_are_rfc3339_utc_millis() -> None:
    stamp = utc_timestamp()
    assert stamp.endswith("Z") and len(stamp) == len("2026-08-06T10:00:00.000Z")
