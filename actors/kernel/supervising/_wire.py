"""What a child may say to the supervisor, checked before anything reaches the mailbox.

A frame that breaks these rules closes the child's channel with the reason logged, and
the child is restarted; nothing it sent after that frame is taken.

Such a frame is garbage, an oversize length, a map without `type`, a field of the wrong
type, or a `kernel.*` type a child may not send. The reason is logged and kept as the
child's `last_exit` (`lineup debug actors`); the child is killed and restarted by its
policy, and the supervisor itself never stops for it.
"""

from __future__ import annotations

from typing import Any

from .._specs import ACTOR_NAME
from ..wire import Frame

MAX_TYPE = 128
MAX_ID = 128
MAX_ACKS = 65536
_MESSAGE_KEYS = frozenset({"v", "id", "to", "type", "body", "call", "corr"})
# Recipient names already matched against ACTOR_NAME: a frame's `to` is almost always one
# of a few actors, and the match cost as much as the rest of the checks. Bounded, so that
# a child inventing names cannot grow it.
_known_names: set[str] = set()
_KNOWN_NAMES_MAX = 4096


class ProtocolViolation(Exception):
    """A child sent a well-framed but meaningless or forbidden frame."""


def _short_str(value: Any, limit: int) -> bool:
    return isinstance(value, str) and 0 < len(value) <= limit


def classify(frame: Frame) -> tuple[str, Any]:
    """Map a child's frame to a switchboard operation (kind, payload), or raise."""
    kind = frame["type"]  # a string: the codec refuses frames without one
    if kind.startswith("kernel."):
        return _classify_kernel(kind, frame)
    # A message: every frame an actor emits comes through here, so the checks are inline.
    if frame.get("v") != 1:
        raise ProtocolViolation(f"message version {frame.get('v')!r} is not 1")
    if not frame.keys() <= _MESSAGE_KEYS:
        extra = set(frame) - _MESSAGE_KEYS
        raise ProtocolViolation(f"unknown message fields: {', '.join(sorted(map(str, extra)))}")
    message_id = frame.get("id")
    if type(message_id) is not str or not 0 < len(message_id) <= MAX_ID:
        raise ProtocolViolation("message needs a string `id` of at most 128 characters")
    if not 0 < len(kind) <= MAX_TYPE:
        raise ProtocolViolation("message `type` too long")
    to = frame.get("to")
    if type(to) is not str or to not in _known_names:
        if not isinstance(to, str) or not ACTOR_NAME.match(to):
            raise ProtocolViolation(f"message `to` {to!r} is not an actor name")
        if len(_known_names) < _KNOWN_NAMES_MAX:
            _known_names.add(to)
    if "body" in frame and type(frame["body"]) is not bytes:
        raise ProtocolViolation("message `body` must be packed msgpack bytes")
    if "call" in frame and type(frame["call"]) is not bool:
        raise ProtocolViolation("message `call` must be a boolean")
    return "message", frame


def _classify_kernel(kind: str, frame: Frame) -> tuple[str, Any]:
    if kind in ("kernel.ack", "kernel.hold"):
        seqs = frame.get("seqs")
        if (
            not isinstance(seqs, list)
            or not 0 < len(seqs) <= MAX_ACKS
            or not all(type(s) is int for s in seqs)
        ):
            raise ProtocolViolation(f"{kind} needs a non-empty list of integer seqs")
        return kind.removeprefix("kernel."), seqs
    if kind == "kernel.fail":
        if type(frame.get("seq")) is not int or not isinstance(frame.get("error"), str):
            raise ProtocolViolation("kernel.fail needs an integer seq and a string error")
        return "fail", {"seq": frame["seq"], "error": frame["error"][:2000]}
    if kind == "kernel.reply":
        if not _short_str(frame.get("corr"), MAX_ID):
            raise ProtocolViolation("kernel.reply needs the request id in `corr`")
        error = frame.get("error")
        if error is not None and not (
            isinstance(error, dict) and isinstance(error.get("code"), str)
        ):
            raise ProtocolViolation("kernel.reply `error` must be a map with a string code")
        if "body" in frame and not isinstance(frame["body"], bytes):
            raise ProtocolViolation("kernel.reply `body` must be packed msgpack bytes")
        return "reply", frame
    raise ProtocolViolation(f"{kind} is not a frame a child may send here")


def check_supervise(frame: Frame) -> Frame:
    """`kernel.supervise` {`corr`, `op`: start (`spec` map) | stop (`name`)}, or raise."""
    if not _short_str(frame.get("corr"), MAX_ID):
        raise ProtocolViolation("kernel.supervise needs a request id in `corr`")
    op = frame.get("op")
    if op == "start" and isinstance(frame.get("spec"), dict):
        return frame
    if op == "stop" and isinstance(frame.get("name"), str):
        return frame
    raise ProtocolViolation("kernel.supervise needs op start with a spec, or stop with a name")
