"""The frame codec and the id scheme: the two things every other kernel rule leans on."""

from __future__ import annotations

import struct
import time

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.kernel import (
    DerivedIds,
    FrameDecoder,
    FrameError,
    _ids,
    derive_id,
    encode,
    id_timestamp,
    is_valid_id,
    new_id,
)
from actors.kernel._ids import _decode, _encode
from actors.kernel.wire import delivery


def test_ids_are_time_ordered_and_unique() -> None:
    ids = [new_id() for _ in range(10_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(is_valid_id(i) for i in ids)
    # Each id is its value encoded whole (new_id encodes most of it once a millisecond).
    assert all(_encode(_decode(i)) == i for i in ids)


def test_an_id_whose_counter_carries_past_the_cached_characters_is_encoded_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same millisecond, with the counter 1 below a carry into the 21 cached characters.
    monkeypatch.setattr(_ids, "_last_ms", time.time_ns() // 1_000_000 + 60_000)
    monkeypatch.setattr(_ids, "_last_rand", (1 << 25) - 2)
    before, carried = new_id(), new_id()
    assert _decode(carried) == _decode(before) + 1
    assert carried[:21] != before[:21]
    assert _encode(_decode(carried)) == carried


def test_derived_ids_are_deterministic_and_distinct() -> None:
    parent = new_id()
    first = [derive_id(parent, n) for n in range(100)]
    assert first == [derive_id(parent, n) for n in range(100)]
    assert len(set(first)) == 100
    assert derive_id(new_id(), 0) != first[0]
    assert id_timestamp(first[7]) == id_timestamp(parent)


@given(st.text(min_size=1, max_size=40), st.integers(min_value=0, max_value=2**24 - 1))
def test_a_derived_id_carries_its_position_and_sorts_by_it(parent: str, position: int) -> None:
    value = int(derive_id(parent, position).translate(_TO_PYTHON), 32)
    assert value & (2**24 - 1) == position
    assert is_valid_id(derive_id(parent, position))
    if position:
        assert derive_id(parent, position - 1) < derive_id(parent, position)


def test_a_replayed_handler_derives_the_same_ids_in_the_same_process() -> None:
    # A handler that failed is redelivered to the same process: its new DerivedIds must
    # start over at position 0, or the replay would emit ids the mailbox has not seen.
    parent = new_id()
    first = DerivedIds(parent)
    emitted = [first.next() for _ in range(3)]
    replay = DerivedIds(parent)
    assert [replay.next() for _ in range(3)] == emitted
    assert emitted == [derive_id(parent, n) for n in range(3)]


_TO_PYTHON = str.maketrans("0123456789ABCDEFGHJKMNPQRSTVWXYZ", "0123456789abcdefghijklmnopqrstuv")


@given(
    st.lists(
        st.dictionaries(
            st.text(max_size=5),
            st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.text(),
            max_size=4,
        ),
        max_size=20,
    ),
    st.integers(min_value=1, max_value=64),
)
def test_frames_survive_any_split(bodies: list[dict[str, object]], chunk: int) -> None:
    frames = [{**body, "type": "t"} for body in bodies]
    wire = b"".join(encode(f) for f in frames)
    decoder = FrameDecoder()
    got = []
    for i in range(0, len(wire), chunk):
        got.extend(decoder.feed(wire[i : i + chunk]))
    assert got == frames
    assert decoder.buffered == 0


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        (struct.pack(">I", 2_000_000), "exceeds the limit"),
        (struct.pack(">I", 3) + b"\xc1\xc1\xc1", "undecodable"),
        (struct.pack(">I", 2) + msgpack.packb([1]), "not a map"),
        (struct.pack(">I", 1) + msgpack.packb({}), "no string `type`"),
    ],
)
def test_bad_frames_have_definite_reasons(wire: bytes, reason: str) -> None:
    with pytest.raises(FrameError, match=reason):
        FrameDecoder().feed(wire)


@given(
    st.dictionaries(
        st.sampled_from(["v", "id", "to", "type", "body", "call", "corr"]),
        st.integers(min_value=-(2**63), max_value=2**64 - 1),
    ),
    st.text(max_size=20),
    st.integers(min_value=0, max_value=2**64 - 1),
    st.integers(min_value=0, max_value=1000),
)
def test_a_delivery_is_the_packed_message_with_the_kernel_fields_appended(
    frame: dict[str, int], sender: str, seq: int, attempt: int
) -> None:
    wire = delivery(msgpack.packb(frame), sender, seq, attempt)
    # a whole frame: its length prefix is right and it decodes to the message and fields
    assert struct.unpack(">I", wire[:4])[0] == len(wire) - 4
    assert msgpack.unpackb(wire[4:]) == {**frame, "from": sender, "seq": seq, "attempt": attempt}


def test_a_map_without_room_for_the_fields_is_encoded_again() -> None:
    for size in (13, 15, 16):  # a fixmap holds at most 15 keys; 16 is a map16
        message = {str(n): n for n in range(size)}
        wire = delivery(msgpack.packb(message), "a", 7, 1)
        assert msgpack.unpackb(wire[4:]) == {**message, "from": "a", "seq": 7, "attempt": 1}
