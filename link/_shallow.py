"""A stream frame (`batch`, `deliver`) read down to its messages' own JSON text.

The runtime's router validates every message it is given from its text (`validate_message`,
the filter chain's step 1: size, depth, duplicate keys, lone surrogates, the envelope), so
the link in front of it need not decode the whole frame to that same standard (and the
transport re-encode each message for the router). Here the frame is parsed once by the C
scanner and its shell is checked as the `Batch` / `Deliver` / `Item` models check it (exact
keys, `seq` within 1 … 2^53-1 and strictly rising, at most 256 items, each message an object
whose stamped sequence, if any, is its `seq`), without building the models; each message's
exact text is kept for the router. What this does not check inside a message (duplicate
keys, lone surrogates, depth beyond 3 + 32, 64-bit integers) the router's step 1 does on
that text, message by message, so a bad message is rejected and audited instead of ending
the connection.

Only the compact form `encode_frame` writes (and the reference AppServer splices) is read
this way; anything else (another key order, spacing, a malformed frame) returns None, and
the caller takes the full `validate_frame` path, which raises what it always did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from contracts import MAX_BATCH_ITEMS, MAX_FRAME_BYTES, MAX_SEQUENCE

_BATCH: Final = '{"frame":"batch","items":['
_DELIVER: Final = '{"frame":"deliver","seq":'
_SEQ: Final = '{"seq":'
_MESSAGE: Final = ',"message":'


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# strict: control characters inside strings are refused, as `json.loads` does.
_SCAN: Final = json.JSONDecoder(parse_constant=_reject_constant).scan_once  # type: ignore[attr-defined]


class _NotShallow(Exception):
    pass


@dataclass(frozen=True, slots=True)
class StreamFrame:
    """A `batch` or `deliver` frame: `(seq, message, its exact text)` in order."""

    frame: Literal["batch", "deliver"]
    items: list[tuple[int, dict[str, Any], str]]


def _item(raw: str, i: int, after: int) -> tuple[tuple[int, dict[str, Any], str], int]:
    """`N,"message":M}` at `i` (N past `after`): the item and the index after its `}`."""
    comma = raw.find(",", i, i + 24)
    if comma < 0 or not raw.startswith(_MESSAGE, comma):
        raise _NotShallow
    seq_text = raw[i:comma]
    # Digits without a leading zero (JSON's form; `int()` would take "01" and non-ASCII digits).
    if not (seq_text.isascii() and seq_text.isdigit()) or seq_text[0] == "0":
        raise _NotShallow
    seq = int(seq_text)
    if not after < seq <= MAX_SEQUENCE:
        raise _NotShallow
    start = comma + len(_MESSAGE)
    message, end = _SCAN(raw, start)
    if raw[end] != "}" or not isinstance(message, dict):
        raise _NotShallow
    # The server may stamp its number into the message; if so, they must agree (`Item`).
    correlation = message.get("correlation")
    stamped = correlation.get("sequence") if isinstance(correlation, dict) else message.get("seq")
    if stamped is not None and stamped != seq:
        raise _NotShallow
    return (seq, message, raw[start:end]), end + 1


def _read(raw: str) -> StreamFrame:
    if raw.startswith(_DELIVER):
        item, end = _item(raw, len(_DELIVER), 0)
        if end != len(raw):
            raise _NotShallow
        return StreamFrame("deliver", [item])
    items: list[tuple[int, dict[str, Any], str]] = []
    i, last = len(_BATCH), 0
    if raw[i] != "]":
        while True:
            if not raw.startswith(_SEQ, i) or len(items) == MAX_BATCH_ITEMS:
                raise _NotShallow
            item, i = _item(raw, i + len(_SEQ), last)
            items.append(item)
            last = item[0]
            if raw[i] == "]":
                break
            if raw[i] != ",":
                raise _NotShallow
            i += 1
    if raw[i:] != "]}":
        raise _NotShallow
    return StreamFrame("batch", items)


def read_stream_frame(raw: str | bytes) -> StreamFrame | None:
    """The frame, or None when this is not a `batch` / `deliver` in the compact form, or
    not a valid one: the caller then takes `validate_frame`, which says why."""
    if not isinstance(raw, str) or not raw.startswith((_BATCH, _DELIVER)):
        return None
    if len(raw) > MAX_FRAME_BYTES or len(raw.encode("utf-8", "surrogatepass")) > MAX_FRAME_BYTES:
        return None
    try:
        return _read(raw)
    except (_NotShallow, ValueError, IndexError, RecursionError):
        return None  # ValueError: not JSON (a NaN, a control character, ...)
