"""Time-ordered message ids and the deterministic ids of derived messages.

Ids are 26-character Crockford base32 strings of 128 bits: 48 bits of Unix milliseconds,
then 80 bits that are random (fresh ids) or, for derived ids, 56 bits of a hash of the
parent id and 24 bits of output position. Time-ordered keys keep the mailbox's unique index
append-mostly, which the hardware baseline shows is worth +44 % insert throughput over
random uuid4 keys; the outputs of one handler are adjacent in the index for the same reason.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # 10 bits at a time: 13 lookups
_TO_PYTHON_BASE32 = str.maketrans(_ALPHABET, "0123456789abcdefghijklmnopqrstuv")
MAX_POSITION = (1 << 24) - 1
ID_PATTERN = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")

_last_ms = 0
_last_rand = 0
_head_of = -1  # the value >> 25 that `_head` encodes
_head = ""


def _encode(value: int) -> str:
    # 13 pairs carry 130 bits; the first character of a 128-bit value is at most "7".
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in range(120, -1, -10)])


def _decode(text: str) -> int:
    return int(text.translate(_TO_PYTHON_BASE32), 32)


def new_id() -> str:
    """A fresh id, strictly increasing within this process (monotonic within a millisecond)."""
    global _last_ms, _last_rand, _head_of, _head
    now = time.time_ns() // 1_000_000
    if now <= _last_ms:
        now = _last_ms
        rand = _last_rand + 1
    else:
        rand = int.from_bytes(os.urandom(10), "big") >> 1  # leave room to increment
    _last_ms, _last_rand = now, rand
    value = (now << 80) | (rand & ((1 << 80) - 1))
    # The ids of one millisecond differ in their last few characters (rand counts up):
    # the first 21 are encoded once for all of them, the last 5 (25 bits) each time.
    if value >> 25 != _head_of:
        _head_of, _head = value >> 25, _encode(value)[:21]
    return _tail(_head, value)


def _tail(head: str, value: int) -> str:
    """`head` (21 characters) and the last 5, which carry the low 25 bits of `value`."""
    return (
        head + _ALPHABET[(value >> 20) & 31] + _PAIRS[(value >> 10) & 1023] + _PAIRS[value & 1023]
    )


def derive_id(parent: str, position: int) -> str:
    """The id of the `position`-th message emitted while handling `parent`.

    A handler replayed after a crash emits the same ids again, so the mailbox (which
    inserts by id and ignores duplicates) delivers each output once.
    The timestamp half is the parent's, so derived ids stay near their parent in the index.
    """
    head, low = _derived_head(parent)
    return _derived(head, low, position)


def _derived(head: str, low: int, position: int) -> str:
    if not 0 <= position <= MAX_POSITION:
        raise ValueError(f"`position` must be in 0..{MAX_POSITION}")
    # The last 5 characters carry the low 25 bits: the position and one bit of the hash.
    return _tail(head, low | position)


class DerivedIds:
    """The ids of what one handler emits, in emission order: `derive_id(parent, 0)`, then
    1, 2, ... The actor base class keeps one per handled message; actors that pass ids
    explicitly (a call retried with the same id) make their own."""

    __slots__ = ("_head", "_low", "parent", "position")

    def __init__(self, parent: str) -> None:
        self.parent = parent
        self.position = 0
        self._head = ""  # worked out at the first id: most handlers emit nothing

    def next(self) -> str:
        if not self._head:
            self._head, self._low = _derived_head(self.parent)
        value = _derived(self._head, self._low, self.position)
        self.position += 1
        return value


@functools.lru_cache(maxsize=4096)  # a handler derives many ids from one parent
def _derived_head(parent: str) -> tuple[str, int]:
    """The 21 characters every id derived from `parent` starts with, and the low 25 bits
    of its base (the position goes into those)."""
    base = _derived_base(parent)
    return _encode(base)[:21], base & ((1 << 25) - 1)


def _derived_base(parent: str) -> int:
    # A message born outside may carry an outside identity (an idempotency key) as its
    # id; it has no timestamp to inherit, and a deterministic id must not read the clock.
    timestamp = _decode(parent) >> 80 if ID_PATTERN.match(parent) else 0
    prefix = int.from_bytes(hashlib.blake2b(parent.encode(), digest_size=7).digest(), "big")
    return (timestamp << 80) | (prefix << 24)


def id_timestamp(message_id: str) -> float:
    """Unix seconds at which `message_id` (or its root parent) was minted."""
    return (_decode(message_id) >> 80) / 1000.0


def is_valid_id(text: object) -> bool:
    return isinstance(text, str) and ID_PATTERN.match(text) is not None
