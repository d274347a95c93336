"""Times as a person reads them in the terminal: the clock on the wall (local time, the date
only when it is not today) and durations in minutes.

The runtime writes moments as UTC timestamps (RFC 3339); the chat's clients put them in
local time themselves. A tool call the runtime keeps until a deadline carries its timer as
data (`deadline`: `state` and `ends_at`, `paused_at` with `remaining_ms`, or `ended_at`),
and `deadline_words` is its line: "ends 12:27 · in 24 min", "paused at 12:03 · 24 min left",
"ended 12:27". The web page words the same data the same way (its `deadlineWords`), and
counts down as time passes; the terminal says it as it is when it prints.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any, Final

# A UTC timestamp inside a text: written by the runtime, or by an agent quoting it.
TIMESTAMP: Final = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z\b")


def _moment(stamp: Any) -> datetime | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return None


def clock(stamp: Any, now: datetime | None = None) -> str:
    """A UTC timestamp on the local clock: "12:27", or "Dec 7 12:27" when not today; "" for
    what is not a timestamp."""
    moment = _moment(stamp)
    if moment is None:
        return ""
    today = (now or datetime.now().astimezone()).date()
    time = moment.strftime("%H:%M")
    return time if moment.date() == today else f"{moment.strftime('%b')} {moment.day} {time}"


def local_times(text: str) -> str:
    """`text` with each UTC timestamp in it on the local clock."""
    return TIMESTAMP.sub(lambda found: clock(found.group()) or found.group(), text)


def _rounded(value: float) -> int:
    """Half up, as the page's `Math.round` does (Python's `round` goes to even)."""
    return math.floor(value + 0.5)


def duration(ms: float) -> str:
    """A span as a person says it: "under a minute", "24 min", "1 h 5 min"."""
    minutes = _rounded(ms / 60_000)
    if ms < 60_000:
        return "under a minute"
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h" + (f" {rest} min" if rest else "")


def deadline_words(deadline: Any, now: datetime | None = None) -> str:
    """The line of a timer kept by the runtime, at `now`; "" for what is not one."""
    if not isinstance(deadline, dict):
        return ""
    now = now or datetime.now().astimezone()
    state = deadline.get("state")
    if state == "running":
        ends = _moment(deadline.get("ends_at"))
        if ends is None:
            return ""
        left_ms = (ends - now).total_seconds() * 1000
        when = f"in {duration(left_ms)}" if left_ms > 0 else "now"
        return f"ends {clock(deadline['ends_at'], now)} · {when}"
    if state == "paused":
        remaining = deadline.get("remaining_ms")
        at = clock(deadline.get("paused_at"), now)
        if not at or not isinstance(remaining, int):
            return ""
        left = f"{_rounded(remaining / 1000)} s" if remaining < 60_000 else duration(remaining)
        return f"paused at {at} · {left} left"
    ended = clock(deadline.get("ended_at"), now)
    if not ended:
        return ""
    return f"ended {ended}" if state == "finished" else f"stopped {ended}"
