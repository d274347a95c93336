"""The link's shallow reader of stream frames (`link/_shallow.py`) agrees with the
full frame validation on every frame our AppServer writes, keeps each message's exact
text, and hands anything else (a broken shell) back to the full path by returning None."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import encode_frame, validate_frame
from contracts._wire import Batch, Deliver, Item
from link import read_stream_frame

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_MESSAGE = st.dictionaries(_TEXT.filter(lambda k: k not in ("seq", "correlation")), _VALUE)


@settings(max_examples=200, deadline=None)
@given(messages=st.lists(_MESSAGE, max_size=8), start=st.integers(1, 2**40))
def test_it_reads_every_batch_the_full_path_reads(
    messages: list[dict[str, Any]], start: int
) -> None:
    batch = Batch(
        frame="batch",
        items=[Item(seq=start + n, message=m) for n, m in enumerate(messages)],
    )
    raw = encode_frame(batch).decode()
    shallow = read_stream_frame(raw)
    assert shallow is not None and shallow.frame == "batch"
    full = validate_frame(raw)
    assert isinstance(full, Batch)
    assert [(s, m) for s, m, _ in shallow.items] == [(i.seq, i.message) for i in full.items]
    for _, message, text in shallow.items:  # the exact text, for the router's own check
        assert json.loads(text) == message


def test_a_live_deliver_is_read_with_its_text() -> None:
    raw = encode_frame(Deliver(frame="deliver", seq=7, message={"id": "m", "n": 1})).decode()
    frame = read_stream_frame(raw)
    assert frame is not None
    assert frame.items == [(7, {"id": "m", "n": 1}, '{"id":"m","n":1}')]


def test_a_broken_shell_goes_back_to_the_full_path() -> None:
    good = '{"frame":"batch","items":[{"seq":1,"message":{}},{"seq":2,"message":{}}]}'
    assert read_stream_frame(good) is not None
    for bad in (
        good.replace('"seq":2', '"seq":1'),  # not rising
        good.replace('"seq":2', '"seq":02'),  # a leading zero
        good.replace('"seq":1', '"seq":0'),  # below 1
        good + " ",  # trailing text
        good.replace("{}}]", "[]}]"),  # a message that is not an object
        good.replace('{"seq":2,"message":{}}', '{"seq":2,"message":{"seq":3}}'),  # stamp
        good.replace("{}}]", '{"x":NaN}}]'),  # not JSON
        '{"items":[],"frame":"batch"}',  # another key order: the full path decides
        '{"frame":"batch","items":['
        + ",".join(f'{{"seq":{n},"message":{{}}}}' for n in range(1, 258))
        + "]}",  # over 256 items
    ):
        assert read_stream_frame(bad) is None, bad
