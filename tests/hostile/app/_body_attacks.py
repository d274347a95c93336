"""Bodies no SDK packs, in raw bytes: each the start of a plausible body with one thing wrong
in it, sent to every type an app may send (the test names them in its orders)."""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING, Any

import msgpack

if TYPE_CHECKING:
    from ._app import HostileApp


def _packed(value: Any) -> bytes:
    return bytes(msgpack.packb(value, use_bin_type=True))


def _map(*pairs: tuple[bytes, bytes]) -> bytes:
    """A map of up to 15 entries, from keys and values already in msgpack bytes."""
    return bytes((0x80 + len(pairs),)) + b"".join(key + value for key, value in pairs)


_CALL_ID = (_packed("call_id"), _packed("call_nobody_made"))


def _with(value: bytes) -> bytes:
    """A plausible body whose field `x` holds `value`."""
    return _map(_CALL_ID, (_packed("x"), value))


def _float64(value: float) -> bytes:
    return b"\xcb" + struct.pack(">d", value)


_INVALID = "invalid_payload"

# Each shape and the code the door refuses it with.
SHAPES: dict[str, tuple[bytes, str]] = {
    "maps nested 40 deep": (_with(b"\x81\xa1x" * 39 + b"\x80"), "too_deep"),
    "lists nested 40 deep": (_with(b"\x91" * 39 + b"\x90"), "too_deep"),
    "an extension type": (_with(b"\xd4\x05\x00"), _INVALID),
    "an empty extension type": (_with(b"\xc7\x00\x05"), _INVALID),
    "a timestamp": (_with(b"\xd6\xff\x00\x00\x00\x01"), _INVALID),
    # msgpack has no integer past 2**64: an extension claiming one is what an app can send.
    "an integer past 2**64": (_with(b"\xc7\x09\x01" + (2**65).to_bytes(9, "big")), _INVALID),
    "an integer past 2**63": (_with(b"\xcf" + (2**64 - 1).to_bytes(8, "big")), _INVALID),
    "NaN": (_with(_float64(math.nan)), _INVALID),
    "infinity": (_with(_float64(math.inf)), _INVALID),
    "minus infinity": (_with(_float64(-math.inf)), _INVALID),
    "a 32-bit NaN": (_with(b"\xca" + struct.pack(">f", math.nan)), _INVALID),
    "a binary key": (_map(_CALL_ID, (b"\xc4\x01x", _packed(1))), _INVALID),
    "an integer key": (_map(_CALL_ID, (_packed(7), _packed(1))), _INVALID),
    "a duplicate key": (_map(_CALL_ID, (_packed("call_id"), _packed("other"))), _INVALID),
    "invalid UTF-8": (_with(b"\xa2\xff\xfe"), _INVALID),
    "invalid UTF-8 in a key": (_map(_CALL_ID, (b"\xa2\xc3\x28", _packed(1))), _INVALID),
    "an encoded surrogate": (_with(b"\xa3\xed\xa0\x80"), _INVALID),
    "trailing bytes": (_map(_CALL_ID) + b"\xc0", _INVALID),
    "a truncated map": (b"\x82" + b"".join(_CALL_ID), _INVALID),
    "a list": (_packed([{"call_id": "call_nobody_made"}]), _INVALID),
    "a string": (_packed("call_nobody_made"), _INVALID),
    "nil": (b"\xc0", _INVALID),
    "a number": (_packed(7), _INVALID),
    "no bytes": (b"", _INVALID),
}


# Well-formed bodies, each with bytes (which msgpack carries and an artifact's data is) in
# a field of free-form JSON content: each type's door refuses them.
BYTES_IN_JSON: dict[str, tuple[str, str, dict[str, Any]]] = {
    "diagnostics fields": (
        "store",
        "store.diagnostics.report",
        {"events": [{"level": "info", "name": "x", "fields": {"b": b"x"}}]},
    ),
    "session data": (
        "store",
        "store.session_data.replace",
        {"data": {"b": b"x"}, "expected_revision": 0},
    ),
    "an action": ("router", "router.action", {"action": "send_text", "b": b"x"}),
    "a request": ("app_manager", "app_manager.request", {"kind": "list", "b": b"x"}),
    "a report's display": (
        "tool_router",
        "tool_router.report",
        {"call_id": "call_nobody_made", "kind": "deadline", "display": {"b": b"x"}},
    ),
    "a report's output": (
        "tool_router",
        "tool_router.report",
        {"call_id": "call_nobody_made", "kind": "result", "output": {"b": b"x"}},
    ),
    "a deadline's output": (
        "tool_router",
        "tool_router.deadline",
        {"call_id": "call_nobody_made", "action": "finish", "output": {"b": b"x"}},
    ),
    "a capability's input": (
        "capability_gateway",
        "capability_gateway.request",
        {"request_id": "r1", "capability": "file.save", "purpose": "x", "input": {"b": b"x"}},
    ),
}


async def odd_bodies(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Each shape to each target, as a call (what comes back) and as a cast (nothing does,
    nothing may break); then a well-formed map of fields no type declares, which only its
    recipient can refuse."""
    outcomes: dict[str, str] = {}
    for to, type in options["targets"]:
        for label, (body, _) in SHAPES.items():
            outcomes[f"{type} {label}"] = await app.raw(to, type, body)
            await app.raw(to, type, body, call=False)
        outcomes[f"{type} unknown fields"] = await app.raw(to, type, _packed({"odd": 1}))
    for label, (to, type, body) in BYTES_IN_JSON.items():
        outcomes[f"bytes in {label}"] = await app.raw(to, type, _packed(body))
        await app.raw(to, type, _packed(body), call=False)
    return {"outcomes": outcomes}
