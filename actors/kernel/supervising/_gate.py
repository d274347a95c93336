"""The supervisor's side of the door: every message a sender puts on its channel is checked
here before the switchboard stores it.

A `Gate` belongs to one sender (a child, or an injecting control client) and decides from
what the supervisor knows, never from what the message claims: the recipient must exist
and its door must let this sender send this type. An app process (`app.*`) is held to
more, because its code is not the runtime's and what it sends costs the shared actors
work:

- the bytes of bodies it may put on each recipient's queue (a token bucket per
  recipient): past them a message is refused (`rate_limited`), so one app's big bodies
  cannot fill the queue of an actor every app shares, and what they cost is its own;
- its bodies are decoded here and bounded (size, nesting, values);
- its pace, in messages and in bytes of frames whatever their fate (token buckets: its
  channel waits, nothing is dropped), and what it has stored and not yet handled (its
  sending credits).

A refused message is never stored: a `call` gets a `kernel.reply` error with the code, a
cast is dropped; both are counted against the sender and logged, at most once in ten
seconds.

The limits (`RuntimeConfig.app_limits`, `AppLimits`), all checked before anything is
stored; a frame (of any child) is at most `max_frame`, 1 MiB, before any of this:

| limit | default | when reached |
|---|---|---|
| packed body (`max_body`) | 256 KiB | `too_large` |
| values in one body, decoded (`max_items`) | 65,536 | `too_large` |
| nesting (`max_depth`; may be lowered, not raised) | 32 levels | `too_deep` |
| bytes of bodies on one recipient's queue | 1 MiB a second, bursts of 4 MiB | `rate_limited` |
| pace in messages (a refused one costs a tenth) | 2,000 a second, bursts of 4,000 | waits |
| pace in bytes of frames, refused or not | 16 MiB a second, bursts of 32 MiB | waits |
| sending credits: stored and not yet handled | 256 | waits |

"Waits" means its channel is not read until the bucket refills or its recipients have
handled some: its sends block, nothing is dropped. The values count every string, number,
list, map and key (a megabyte of empty arrays is a million lists); every actor holds an
app's body to 32 levels too, and msgpack's own stack stops deeper ones. The per-recipient
bucket refuses before the body is decoded.

What an app's input costs a shared actor is so bounded and charged to that app: past its
byte budget its own messages to that actor are refused (a result it sends then is lost
with them, and its call expires: its flood is its own), and the backlog it can put ahead
of another app's messages in any mailbox is its sending credits and one burst, a few tens
of milliseconds of the tool router's work. `tests/hostile/test_tool_flood.py` measures it:
big reports at the app's pace, or small ones at its message pace, plus calls of a tool
whose output costs its schema's whole check budget, while another app's calls take at most
twice their quiet time and the tool router never misses a heartbeat. Deliveries are not
scheduled round-robin across senders: within these bounds they need not be.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

import trio

from .._door import APP_PREFIX, OPEN_DOOR, Door
from .._specs import AppLimits
from ..wire import BodyRefused, Frame, read_app_body

log = logging.getLogger("lineup.supervisor")

_VERDICTS_MAX = 4096  # (recipient, type) pairs remembered per sender: an app inventing
# names or types cannot grow it
_BUCKETS_MAX = 256  # recipients with a byte budget of their own per sender; past it, the
# rest share one
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


class TokenBucket:
    """`rate` tokens a second, at most `burst` saved up; full at the start."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.filled = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.filled) * self.rate)
        self.filled = now

    def take(self, amount: float) -> float:
        """Take `amount`, in debt if need be: the seconds until the debt is paid."""
        self._refill()
        self.tokens -= amount
        return max(0.0, -self.tokens / self.rate)

    def take_if_held(self, amount: float) -> bool:
        """Take `amount` only if it is there."""
        self._refill()
        if self.tokens < amount:
            return False
        self.tokens -= amount
        return True


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
        self._messages = TokenBucket(limits.rate, limits.burst)
        self._bytes = TokenBucket(limits.bytes_rate, limits.bytes_burst)
        self._queued_bytes: dict[str, TokenBucket] = {}
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
            body = frame.get("body", b"")
            # Charged before it is decoded, so that what is refused for its bytes costs
            # nothing more; one over the size of any body is refused for that, uncharged.
            if len(body) <= self.limits.max_body:
                self._charge(frame["to"], len(body), self.limits)
            check_body(body, self.limits)

    def _charge(self, to: str, size: int, limits: AppLimits) -> None:
        bucket = self._queued_bytes.get(to)
        if bucket is None:
            key = to if len(self._queued_bytes) < _BUCKETS_MAX else ""
            bucket = self._queued_bytes.setdefault(
                key, TokenBucket(limits.recipient_bytes_rate, limits.recipient_bytes_burst)
            )
        if not bucket.take_if_held(size):
            raise Refusal(
                "rate_limited",
                f"over {limits.recipient_bytes_rate} bytes a second of bodies to {to!r};"
                " send less, or wait",
            )

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

    async def pace(self, count: float, size: int) -> None:
        """Wait until an app may send `count` more messages and `size` more bytes of frames
        (its token buckets). A message the door refused costs a tenth: it is never stored,
        only decoded and counted; its bytes cost in full, for they were read."""
        if self.limits is None:
            return
        wait = max(self._messages.take(count), self._bytes.take(size))
        if wait:
            # Its channel is not read meanwhile: the app's own sends block, nothing is lost.
            await trio.sleep(wait)

    def statistics(self) -> dict[str, int]:
        return dict(self.refused)
