"""Deadline operations: a call the runtime owns until a moment it recorded.

A tool declared `handling: runtime_operation` is one: its app's handler hands its call
over by answering with a deadline (`duration_ms`, and a small `display` map for its own
use), never with a result. From then on the tool router alone ends the call, and the app's
reports on it are refused:

    waiting_foreground ─▶ running ─▶ finished      (at ends_ms: the one final result)
            │                └──────▶ interrupted  (the agent's cancel or stop call, the
            └───────────────────────▶ interrupted   user's stop: the one final error)

- **Started** once the call's app is in front for a `foreground_required` tool (at once for
  any other): `started_ms` and `ends_ms` are recorded with the call's step, and only then
  does the agent get `progress {stage: "started", ends_at}`.
- **Finished** when the tool router notices `ends_ms` has passed, however late (after a
  restart across it): the result says when it was to end, when it ended and when the
  runtime noticed (`deadline_output`), and must fit the tool's output schema.
- **Interrupted** by the agent (`lineup.tool.cancel` of the call, or a call of the same
  app in the same conversation that asks for it, such as a stop tool) or by the user (a
  stop in the chat): `cancelled_by_user`, saying who, and when it was to end.

The operation's row goes into `tool_deadlines` in the same store step as its call's row,
so the call's state and its operation's never disagree on disk.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from actors.contracts import utc_timestamp
from actors.kernel import derive_id

WAITING_FOREGROUND: Final = "waiting_foreground"
RUNNING: Final = "running"
FINISHED: Final = "finished"
INTERRUPTED: Final = "interrupted"
CALL_STATE: Final = "deadline"  # the state of a call whose deadline operation is open
HANDLING: Final = "runtime_operation"  # how a tool whose calls become deadlines is declared
MAX_DURATION_MS: Final = 86_400_000  # a day, like a call's absolute cap
MAX_DISPLAY_BYTES: Final = 4096
# The kernel messages that tell the app its operation started, and ended: ids derived from
# the operation's, so telling it again (after a restart) is the same message, kept once.
TOLD_STARTED: Final = 0
TOLD_ENDED: Final = 1


def timestamp(ms: int | None) -> str | None:
    """A stored moment as the agent reads it (RFC 3339, UTC)."""
    return None if ms is None else utc_timestamp(datetime.fromtimestamp(ms / 1000, UTC))


@dataclass
class Deadline:
    call_id: str
    operation_id: str
    app_scope: str
    conversation_id: str
    instance_id: str | None
    duration_ms: int
    requested_ms: int
    display: dict[str, Any] = field(default_factory=dict)
    state: str = WAITING_FOREGROUND
    started_ms: int | None = None
    ends_ms: int | None = None
    ended_ms: int | None = None
    noticed_ms: int | None = None
    ended_by: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Deadline:
        names = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {k: row.get(k) for k in names}
        values["display"] = values.get("display") or {}
        return cls(**values)

    def to_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def open(self) -> bool:
        return self.state in (WAITING_FOREGROUND, RUNNING)

    def told_id(self, news: int) -> str:
        return derive_id(self.operation_id.removeprefix("op_"), news)

    def start(self, now_ms: int) -> None:
        self.state, self.started_ms, self.ends_ms = RUNNING, now_ms, now_ms + self.duration_ms

    def due(self, now_ms: int) -> bool:
        return self.state == RUNNING and self.ends_ms is not None and self.ends_ms <= now_ms

    def finish(self, now_ms: int) -> None:
        """It ran to its end: it ended at `ends_ms`, whenever the runtime noticed."""
        self.state, self.ended_ms, self.noticed_ms = FINISHED, self.ends_ms, now_ms
        self.ended_by = "deadline"

    def interrupt(self, now_ms: int, by: str) -> None:
        self.state, self.ended_ms, self.noticed_ms, self.ended_by = INTERRUPTED, now_ms, now_ms, by

    def view(self) -> dict[str, Any]:
        """What its app is told about it (`tool_router.deadline`), and the operator."""
        shown: dict[str, Any] = {
            "call_id": self.call_id,
            "operation_id": self.operation_id,
            "state": self.state,
            "duration_ms": self.duration_ms,
            "display": self.display,
        }
        for name, ms in (
            ("started_at", self.started_ms),
            ("ends_at", self.ends_ms),
            ("ended_at", self.ended_ms),
        ):
            if ms is not None:
                shown[name] = timestamp(ms)
        if self.ended_by:
            shown["ended_by"] = self.ended_by
        return shown


def deadline_output(deadline: Deadline) -> dict[str, Any]:
    """The final result of an operation that ran to its end."""
    return {
        "state": FINISHED,
        "started_at": timestamp(deadline.started_ms),
        "ends_at": timestamp(deadline.ends_ms),
        "ended_at": timestamp(deadline.ended_ms),
        "noticed_at": timestamp(deadline.noticed_ms),
    }


def sample_output(duration_ms: int) -> dict[str, Any]:
    """A result such an operation would give, to check the tool's schema takes it before
    the operation starts."""
    sample = Deadline("", "", "", "", None, duration_ms, 0)
    sample.start(0)
    sample.finish(0)
    return deadline_output(sample)


def interrupted_detail(deadline: Deadline, by: str) -> str:
    ends = timestamp(deadline.ends_ms)
    return f"interrupted by {by}" + (f"; it was to end at {ends}" if ends else " before it started")
