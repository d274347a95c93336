"""Bounded JSON decoding: the first gate every outside message passes (filter chain, step 1).

Size is checked before parsing and depth before any recursive code touches the value, so a
hostile message costs at most one bounded parse and can never raise `RecursionError`,
`MemoryError`-sized work or an encoder error later in the runtime. What passes is plain JSON
data: dicts with string keys, lists, strings (valid Unicode), bools, None, 64-bit integers
and finite floats, which msgpack, SQLite and every peer can carry unchanged.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from contracts._codes import Code, ContractError

# A generous bound for one envelope; bulk data travels as artifacts, not in messages.
MAX_ENVELOPE_BYTES: Final = 256 * 1024
# Counting containers from the root object (depth 1); the payload object is depth 2.
MAX_JSON_DEPTH: Final = 32
# One wire frame may carry a batch of envelopes (docs/protocol.md).
MAX_FRAME_BYTES: Final = 1024 * 1024

_INT_MIN: Final = -(1 << 63)
_INT_MAX: Final = (1 << 64) - 1
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")


class _DuplicateKeyError(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Duplicate keys are read differently by different parsers: a classic smuggling vector.
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(f"duplicate key {key!r}")
            seen.add(key)
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _bad_string(text: str) -> bool:
    return not text.isascii() and _SURROGATE_RE.search(text) is not None


def _check_tree(value: object, depth: int, max_depth: int) -> None:
    """Checks depth and that `value` is plain JSON data.

    Recursive, but it refuses to go below `max_depth`, so the Python stack it uses is
    bounded by the limit itself.
    """
    if isinstance(value, str):
        if _bad_string(value):
            raise ContractError(Code.INVALID_JSON, "string holds a lone surrogate")
    elif isinstance(value, Mapping):
        if depth > max_depth:
            raise ContractError(Code.TOO_DEEP, f"nesting deeper than {max_depth}")
        for key, child in value.items():
            if not isinstance(key, str) or _bad_string(key):
                raise ContractError(Code.INVALID_JSON, "object key is not a valid string")
            if not isinstance(child, str) or _bad_string(child):
                _check_tree(child, depth + 1, max_depth)
    elif isinstance(value, list | tuple):
        if depth > max_depth:
            raise ContractError(Code.TOO_DEEP, f"nesting deeper than {max_depth}")
        for child in value:
            _check_tree(child, depth + 1, max_depth)
    elif value is None or isinstance(value, bool):
        return
    elif isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise ContractError(Code.INVALID_JSON, "integer outside the 64-bit range")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ContractError(Code.INVALID_JSON, "number is not finite")
    else:
        raise ContractError(Code.INVALID_JSON, f"{type(value).__name__} is not JSON data")


def encode_json(value: object) -> bytes:
    """Compact UTF-8 JSON: the canonical encoding whose length the size limits measure."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def decode_json(
    raw: bytes | bytearray | memoryview | str | Mapping[str, Any],
    *,
    max_bytes: int = MAX_ENVELOPE_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
) -> object:
    """Parses and bounds-checks one JSON value, raising only `ContractError`.

    A Mapping is accepted as already-parsed JSON (messages coming from inside the runtime)
    and is held to the same rules; its size is that of its canonical encoding.
    """
    if isinstance(raw, Mapping):
        _check_tree(raw, 1, max_depth)
        try:
            encoded = encode_json(raw)
        except (TypeError, ValueError) as exc:  # e.g. a nested Mapping that is not a dict
            raise ContractError(Code.INVALID_JSON, str(exc)) from None
        if len(encoded) > max_bytes:
            raise ContractError(Code.TOO_LARGE, f"{len(encoded)} bytes exceeds {max_bytes}")
        # A private copy of plain dicts and lists: the caller may keep mutating its own.
        return json.loads(encoded)
    if isinstance(raw, memoryview | bytearray | bytes):
        if len(raw) > max_bytes:
            raise ContractError(Code.TOO_LARGE, f"{len(raw)} bytes exceeds {max_bytes}")
        try:
            # UTF-8 only: `json.loads(bytes)` would also guess UTF-16 and UTF-32.
            text = bytes(raw).decode()
        except UnicodeDecodeError:
            raise ContractError(Code.INVALID_JSON, "bytes are not UTF-8") from None
    elif isinstance(raw, str):
        # Cheap bound first: a str never has more characters than UTF-8 bytes.
        if len(raw) > max_bytes:
            raise ContractError(Code.TOO_LARGE, f"more than {max_bytes} bytes")
        try:
            size = len(raw.encode())
        except UnicodeEncodeError:
            raise ContractError(Code.INVALID_JSON, "text is not valid Unicode") from None
        if size > max_bytes:
            raise ContractError(Code.TOO_LARGE, f"{size} bytes exceeds {max_bytes}")
        text = raw
    else:
        raise ContractError(Code.INVALID_JSON, f"{type(raw).__name__} is not JSON text")
    try:
        value = json.loads(
            text, object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant
        )
    except RecursionError:
        raise ContractError(Code.TOO_DEEP, f"nesting deeper than {max_depth}") from None
    except ValueError as exc:
        # JSONDecodeError, duplicate keys, NaN/Infinity, over-long integers.
        raise ContractError(Code.INVALID_JSON, str(exc)) from None
    _check_tree(value, 1, max_depth)
    return value
