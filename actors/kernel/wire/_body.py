"""What a body an app packed itself may be: read by the supervisor before it is stored and
again by its recipient before any handler sees it, the same rules in both places.

An app's bodies are bytes of its own making. The runtime's handlers are written for what an
SDK packs: a map with string keys, holding maps, lists, strings, bytes, booleans, nil,
finite numbers and integers SQLite can keep. Whatever else msgpack can say is refused here,
each with its code, so that no handler ever meets it:

- `too_deep`: nesting past the bound (handlers and schema checks walk values recursively);
- `too_large`: more values than the bound, or one string, bytes or container over it;
- `invalid_payload`: not exactly one msgpack value (garbage, truncated, trailing bytes), no
  map at the top, an extension type (a timestamp among them), a key that is not a string,
  a key twice in one map (decoders disagree on which one counts), a string that is not
  UTF-8, a NaN or an infinity, an integer outside the signed 64-bit range.

Everything this raises is a `BodyRefused`: a reader that could raise anything else would
let a body end the process reading it.

The recipient reads an app's body again by these rules before its declared type is
checked: the supervisor's check is not counted on. A refusal is counted against the sender
like any refusal. `tests/hostile/test_bodies.py` sends each of these shapes to every type an
app may send (derived from the running runtime's doors) and checks that no core actor
restarts and nothing is dead-lettered; a Hypothesis fuzz holds the reader and every door's
type checks to raising nothing but their refusal. An app's answer to a call (the web host's
surface requests) is read by its caller by the same rules, any value at its top: a refused
one is `CallFailed` with the code (`Actor.call`), never an exception out of the call.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

import msgpack

INVALID = "invalid_payload"
TOO_DEEP = "too_deep"
TOO_LARGE = "too_large"
# What SQLite's INTEGER holds: a larger one fails wherever a handler stores it.
INT_MIN = -(1 << 63)
INT_MAX = (1 << 63) - 1


class BodyRefused(Exception):
    """A body refused with its code and one sentence saying what is wrong with it."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


def _plain_map(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    for key, _ in pairs:
        if type(key) is not str:
            raise BodyRefused(INVALID, "a map key in the body is not a string")
    value = dict(pairs)
    if len(value) != len(pairs):
        raise BodyRefused(INVALID, "a map in the body holds the same key twice")
    return value


def _no_extension(code: int, data: bytes) -> NoReturn:
    raise BodyRefused(INVALID, f"the body holds an extension type ({code})")


def read_app_body(body: bytes, *, max_depth: int, max_items: int, max_len: int) -> dict[str, Any]:
    """The map `body` holds, or BodyRefused; `max_len` bounds each string, bytes and
    container, `max_items` the values all told, `max_depth` the nesting (the top map is 1)."""
    value = read_app_value(body, max_depth=max_depth, max_items=max_items, max_len=max_len)
    if type(value) is not dict:
        raise BodyRefused(INVALID, "the body is not a map")
    return value


def read_app_value(body: bytes, *, max_depth: int, max_items: int, max_len: int) -> Any:
    """`read_app_body` for a value of any kind at the top: an app's answer to a call."""
    try:
        value = msgpack.unpackb(
            body,
            raw=False,
            strict_map_key=False,  # `_plain_map` says which key is wrong
            object_pairs_hook=_plain_map,
            ext_hook=_no_extension,
            max_str_len=max_len,
            max_bin_len=max_len,
            max_array_len=max_items,
            max_map_len=max_items,
            max_ext_len=max_len,
        )
    except BodyRefused:
        raise
    except msgpack.StackError:
        raise BodyRefused(TOO_DEEP, "the body nests deeper than msgpack allows") from None
    except UnicodeDecodeError:
        raise BodyRefused(INVALID, "a string in the body is not UTF-8") from None
    except ValueError as exc:
        if "exceeds max" in str(exc):  # a string, bytes or container over its limit
            too_long = "a string, bytes or list in the body is too long"
            raise BodyRefused(TOO_LARGE, too_long) from None
        raise BodyRefused(INVALID, "the body is not exactly one msgpack value") from None
    except Exception:  # msgpack raises several unrelated types for garbage
        raise BodyRefused(INVALID, "the body is not exactly one msgpack value") from None
    _check_values(value, max_depth, max_items)
    return value


def _check_values(top: Any, max_depth: int, max_items: int) -> None:
    """Walks the body's containers without recursion, checking their values in place: what
    a body costs once decoded is its count of values, not its bytes (a megabyte of empty
    lists is a million lists). A key counts as a value, at its map's values' depth."""
    items = 0
    stack: list[tuple[Any, int]] = [([top], 0)]  # the top value, in a list of its own
    while stack:
        node, depth = stack.pop()
        if type(node) is dict:
            values: Any = node.values()
            items += 2 * len(node)
        else:
            values = node
            items += len(node)
        if items > max_items:
            raise BodyRefused(TOO_LARGE, f"the body holds over {max_items} values")
        if values and depth >= max_depth:
            raise BodyRefused(TOO_DEEP, f"the body nests over {max_depth} levels")
        for value in values:
            kind = type(value)
            if kind is str or kind is bool or kind is bytes or value is None:
                continue
            if kind is dict or kind is list:
                stack.append((value, depth + 1))
            elif kind is int:
                if not INT_MIN <= value <= INT_MAX:
                    raise BodyRefused(INVALID, "an integer in the body is outside 64 bits")
            elif kind is float:
                if not math.isfinite(value):
                    raise BodyRefused(INVALID, "a number in the body is NaN or infinite")
            else:
                raise BodyRefused(INVALID, "the body holds an extension type")
