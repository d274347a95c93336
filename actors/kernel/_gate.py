"""The supervisor's side of the door: every message a sender puts on its channel is checked
here before the switchboard stores it.

A `Gate` belongs to one sender (a child, or an injecting control client) and decides from
what the supervisor knows, never from what the message claims: the recipient must exist
and its door must let this sender send this type. An app process (`app.*`) is held to
more, because its code is not the runtime's: its bodies are decoded here, bounded (size,
nesting, values), its pace is limited (a token bucket: its channel waits, nothing is
dropped) and so is what it has stored and not yet handled (its sending credits). A refused
message is never stored: a `call` gets a `kernel.reply` error with the code, a cast is
dropped; both are counted against the sender and logged, at most once in ten seconds.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

import trio

from ._body import BodyRefused, read_app_body
from ._door import APP_PREFIX, OPEN_DOOR, Door
from ._frames import Frame
from ._specs import AppLimits

log = logging.getLogger("lineup.supervisor")

_VERDICTS_MAX = 4096  # (recipient, type) pairs remembered per sender: an app inventing
# names or types cannot grow it
_LOG_EVERY_S = 10.0


class Doors:
    """Which door each recipient has. A child's door is its spec's; a recipient that is
    no child is an app that is not running (whose messages wait in its inbox) if its name
    says so, and unknown otherwise."""

    def __init__(self, app_door: Door | None) -> None:
        self.by_name: dict[str, Door] = {}
        self.app_door = app_door or OPEN_DOOR
        self.generation = 0  # bumped at each change, so gates forget their verdicts

    def set(self, name: str, door: Door) -> None:
        if self.by_name.get(name) is not door:
            self.by_name[name] = door
            self.generation += 1

    def drop(self, name: str) -> None:
        if self.by_name.pop(name, None) is not None:
            self.generation += 1

    def of(self, name: str) -> Door | None:
        door = self.by_name.get(name)
        if door is None and name.startswith(APP_PREFIX):
            return self.app_door
        return door


class Refusal(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


def check_body(body: bytes, limits: AppLimits) -> None:
    """Raise Refusal unless `body` is a map of plain values within `limits` (`_body`)."""
    if len(body) > limits.max_body:
        raise Refusal("too_large", f"a body of {len(body)} bytes (at most {limits.max_body})")
    try:
        read_app_body(
            body, max_depth=limits.max_depth, max_items=limits.max_items, max_len=limits.max_body
        )
    except BodyRefused as refused:
        raise Refusal(refused.code, refused.detail) from None


class Gate:
    def __init__(self, sender: str, doors: Doors, limits: AppLimits) -> None:
        self.sender = sender
        self.doors = doors
        # Only an app's messages are decoded and paced: the runtime's own actors pack
        # their bodies from Python values, and a check per message would cost the
        # supervisor ≈5 % of its time on the busiest path.
        self.limits = limits if sender.startswith(APP_PREFIX) else None
        self._verdicts: dict[tuple[str, str], str] = {}
        self._generation = doors.generation
        self.refused: Counter[str] = Counter()
        self._tokens = float(limits.burst)
        self._filled = time.monotonic()
        self._logged = 0.0
        self._unlogged = 0

    def check(self, frame: Frame) -> None:
        """Raise Refusal unless this sender may send `frame` (a classified message)."""
        if self._generation != self.doors.generation:
            self._verdicts.clear()
            self._generation = self.doors.generation
        key = (frame["to"], frame["type"])
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._decide(*key)
            if len(self._verdicts) < _VERDICTS_MAX:
                self._verdicts[key] = verdict
        if verdict:
            raise Refusal("sender_not_allowed", verdict)
        if self.limits is not None:  # an app's message without a body has no map either
            check_body(frame.get("body", b""), self.limits)

    def _decide(self, to: str, message_type: str) -> str:
        """'' when allowed, else why not."""
        door = self.doors.of(to)
        if door is None:
            return f"there is no actor named {to!r}"
        if door.allows(message_type, self.sender):
            return ""
        return f"{self.sender!r} may not send {message_type!r} to {to!r}"

    def refuse(self, frame: Frame, refusal: Refusal) -> Frame | None:
        """Count and log a refusal; the reply a caller gets, if the message was a call."""
        self.refused[refusal.code] += 1
        self._unlogged += 1
        now = time.monotonic()
        if now - self._logged >= _LOG_EVERY_S:
            log.warning(
                "refused %d message(s) from %s; the last: %s %s to %s: %s",
                self._unlogged,
                self.sender,
                frame.get("type"),
                frame.get("id"),
                frame.get("to"),
                refusal,
            )
            self._logged, self._unlogged = now, 0
        if not frame.get("call"):
            return None
        return {
            "type": "kernel.reply",
            "corr": frame["id"],
            "from": "supervisor",
            "error": {"code": refusal.code, "detail": refusal.detail},
        }

    async def pace(self, count: float) -> None:
        """Wait until an app may send `count` more messages (its token bucket). What the
        door refused costs a tenth: it is never stored, only decoded and counted."""
        limits = self.limits
        if limits is None:
            return
        now = time.monotonic()
        self._tokens = min(float(limits.burst), self._tokens + (now - self._filled) * limits.rate)
        self._filled = now
        self._tokens -= count
        if self._tokens < 0:
            # Its channel is not read meanwhile: the app's own sends block, nothing is lost.
            await trio.sleep(-self._tokens / limits.rate)

    def statistics(self) -> dict[str, int]:
        return dict(self.refused)
