"""Time-ordered message ids and the deterministic ids of derived messages.

Ids are 26-character Crockford base32 strings of 128 bits: 48 bits of Unix milliseconds,
then 80 bits that are random (fresh ids) or a hash of the parent id and the output position
(derived ids). Time-ordered keys keep the mailbox's unique index append-mostly, which the
hardware baseline shows is worth +44 % insert throughput over random uuid4 keys.
"""

from __future__ import annotations

import hashlib
import os
import re
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
ID_PATTERN = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")

_last_ms = 0
_last_rand = 0


def _encode(value: int) -> str:
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def _decode(text: str) -> int:
    value = 0
    for c in text:
        value = (value << 5) | _DECODE[c]
    return value


def new_id() -> str:
    """A fresh id, strictly increasing within this process (monotonic within a millisecond)."""
    global _last_ms, _last_rand
    now = time.time_ns() // 1_000_000
    if now <= _last_ms:
        now = _last_ms
        rand = _last_rand + 1
    else:
        rand = int.from_bytes(os.urandom(10), "big") >> 1  # leave room to increment
    _last_ms, _last_rand = now, rand
    return _encode((now << 80) | (rand & ((1 << 80) - 1)))


def derive_id(parent: str, position: int) -> str:
    """The id of the `position`-th message emitted while handling `parent`.

    A handler replayed after a crash emits the same ids again, so the mailbox (which
    inserts by id and ignores duplicates) delivers each output once (issue 2, item 4).
    The timestamp half is the parent's, so derived ids stay near their parent in the index.
    """
    if position < 0:
        raise ValueError("`position` must be non-negative")
    timestamp = _decode(parent) >> 80
    digest = hashlib.blake2b(f"{parent}/{position}".encode(), digest_size=10).digest()
    return _encode((timestamp << 80) | int.from_bytes(digest, "big"))


def id_timestamp(message_id: str) -> float:
    """Unix seconds at which `message_id` (or its root parent) was minted."""
    return (_decode(message_id) >> 80) / 1000.0


def is_valid_id(text: object) -> bool:
    return isinstance(text, str) and ID_PATTERN.match(text) is not None
