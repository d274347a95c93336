"""Deadline operations: a call the runtime owns until a moment it recorded.

A tool declared `handling: runtime_operation` is one: its app's handler hands its call
over by answering with a deadline (`duration_ms`, and a small `display` map for its own
use), never with a result. From then on the tool router alone ends the call, and the app's
reports on it are refused:

    waiting_foreground ─▶ running ◀─▶ paused
            │                │          │
            │                ├──────────┴─▶ finished     (at ends_ms: the runtime's result;
            │                │                            or early, with its app's output)
            └────────────────┴────────────▶ interrupted  (the agent's cancel or stop call,
                                                          the user's stop: the one final error)

- **Started** once the call's app is in front for a `foreground_required` tool (at once for
  any other): `started_ms` and `ends_ms` are recorded with the call's step, and only then
  does the agent get `progress {stage: "started", ends_at}`.
- **Finished** when the tool router notices `ends_ms` has passed, however late (after a
  restart across it): the result says when it was to end, when it ended and when the
  runtime noticed (`deadline_output`), and must fit the tool's output schema.
- **Interrupted** by the agent (`lineup.tool.cancel` of the call, or a call of the same
  app in the same conversation that asks for it, such as a stop tool) or by the user (a
  stop in the chat, or through its app): `cancelled_by_user`, saying who, and when it was
  to end.
- **Paused** by its app (the user's pause in its surface): it stops counting, keeping
  `remaining_ms` and no `ends_ms`, so no timer runs for it; **resumed**, it ends
  `remaining_ms` from then. Only a running one pauses: one waiting for the front has not
  started counting.
- **Finished early** by its app (`ended_by: "app"`), with the app's own output as the
  result, held to the tool's output schema like any result.

The operation's row goes into `tool_deadlines` in the same step as its call's row (one
transaction of `tool_router.db`), so the call's state and its operation's never disagree on
disk.

The app's handler hands the call over by returning `self.sdk.tools.deadline(seconds,
display={...})` (reported as `tool_router.report` {`kind`: "deadline", `duration_ms`,
`display`, `alone`?}). A row of `tool_deadlines`:

- `call_id` (the key) and `operation_id` (`op_…`, derived from the call's envelope id; in
  the `scope` of every envelope about the call from then on);
- `app_scope`, `conversation_id`, `instance_id`: whose operation, where, and the instance
  that was in front;
- `duration_ms` (1 ms to a day, from the start) and `display` (a JSON map for the app's own
  view of it, at most 4 KiB);
- `state`: `waiting_foreground`, `running`, `paused` (with `remaining_ms`), `finished` or
  `interrupted`;
- `requested_ms`, `started_ms`, `ends_ms`: when the app asked, when the runtime started it,
  when it ends (`started_ms + duration_ms`);
- `ended_ms`, `noticed_ms`, `ended_by`: when it ended (`ends_ms` when it ran out), when the
  runtime noticed, and who ended it: `deadline`, `the agent`, `the agent (METHOD, call
  ID)`, `the user`, `app`, `the runtime (CODE)`.

- **One at a time, if the app says so.** A handover marked `alone` is refused while an
  operation of the same tool is open (waiting, running or paused) in the conversation: the
  call ends at once `already_running`, its message saying until when the open one runs,
  which call it is and how to end it first; the open one goes on untouched. Handovers are
  taken one at a time, so of two calls racing to start one, exactly one starts.
- **Taken** only from the call's own app while the call is `running`, only for a tool
  declared `handling: runtime_operation` and only if its `output_schema` takes a
  deadline's result (else the call ends `handler_failed`, audited, and no operation
  exists). Such a tool's result is the runtime's alone: its app answering the call with a
  result ends it `handler_failed`, audited; it may still fail it with one of its codes
  before handing it over (the user said no). Its `started` says the app is ready and in
  front, so the agent gets no separate `lineup.tool.activation_ready` for it. The same
  report again (the SDK re-sends its last report after a restart) changes nothing.
- While it waits for the front, the call's `timeout_ms` runs (`operation_expired` if it
  never comes to the front); from the start only the deadline ends it.
- Every 0.1 s the tool router ends each running operation whose `ends_ms` has passed, with
  the call's one `lineup.tool.result` from the runtime, {`state`: "finished",
  `started_at`, `ends_at`, `ended_at`, `noticed_at`}. After a restart across `ends_ms` (of
  the app, the tool router, the store or the whole runtime) the open operations are loaded
  with their calls and the due ones ended at once: `ended_at` is still `ends_at`,
  `noticed_at` says how late the runtime was.
- The user's stop travels `host.ui.action` → `app.input` {`kind`: "stop", `call_id`} to the
  chat app → `tool_router.interrupt`. The runtime's own verdicts end an operation too: the
  app disabled, removed or updated. Closing the app's instance does not: the operation is
  the runtime's, not the process's.
- **One outcome.** Every end goes through the call's one final (its `SLOT_FINAL`
  idempotency key): the first handled wins and is recorded with the operation's row; an
  agent's cancel after it gets the recorded outcome again, a user's stop or an app's
  interrupt after it finds nothing open. An interrupt handled after `ends_at` (the tool
  router had not looked yet, or was down) comes after the deadline: the operation ends
  finished at `ends_at`, and the interrupt gets that outcome.
- **Not the app's.** After the handover the SDK itself holds the call for ended
  (`complete` / `fail` raise `ownership_mismatch`). An app may read its latest operations
  in a conversation (`call.deadlines()`) and interrupt them only through a running call of
  its own there: anything else is `ownership_mismatch`, the same answer for another app's
  call as for none. Before any of an app's own actions the router ends an operation
  already past its end at its deadline. The agent hears a pause and a resume as progress
  (`paused`, `resumed` with the new `ends_at`); `on_deadline` hears them too, and the
  chat's line for the call says the same, each once (their ids derived from the news).
- **The chat's line for the call** carries the timer as data, never as prose
  (`app.tool.event` `deadline`, `shown_deadline`): {`state`: running, `ends_at`} at the
  start and after a resume, {`state`: paused, `paused_at`, `remaining_ms`}, and with the
  final {`state`: finished | interrupted, `ended_at`}. The chat's clients word it, each in
  one place, on the local clock: "ends 12:27 · in 24 min", "paused at 12:03 · 24 min
  left", "ended 12:27" (or "stopped"); minutes are rounded, under a minute is "under a
  minute" (a paused timer's seconds are said). The page words a running timer's line again
  every 15 s; the terminal chat and `lineup chat history` say it as it is when they print
  (`apps.chat.deadline_words`).
- **Told to the app**, to show it: when the operation starts and when it ends, the tool
  router casts `app.tool.deadline` (its record, with `conversation_id` and `instance_id`)
  to the app's process, which takes it from the tool router only (`sdk.tools.on_deadline`).
  The app decides nothing by it. At its start the tool router tells again what it recorded
  within the last hour (the same message ids, so the mailbox keeps each once): a start or
  end recorded just before it was killed still reaches the app.
- **Seen by the operator**: `lineup tools calls` shows a call in state `deadline` with when
  its operation ends (or that it waits for the front, or how long it has left while
  paused); `--json` adds the operation's row.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from actors.kernel import derive_id
from contracts import utc_timestamp

WAITING_FOREGROUND: Final = "waiting_foreground"
RUNNING: Final = "running"
PAUSED: Final = "paused"
FINISHED: Final = "finished"
INTERRUPTED: Final = "interrupted"
CALL_STATE: Final = "deadline"  # the state of a call whose deadline operation is open
HANDLING: Final = "runtime_operation"  # how a tool whose calls become deadlines is declared
MAX_DURATION_MS: Final = 86_400_000  # a day, like a call's absolute cap
MAX_DISPLAY_BYTES: Final = 4096
# The kernel messages that tell the app its operation started, and ended: ids derived from
# the operation's, so telling it again (after a restart) is the same message, kept once.
# Its n-th pause and resume are told under 2n and 2n + 1 (`Deadline.told_pause`).
TOLD_STARTED: Final = 0
TOLD_ENDED: Final = 1
ENDED_BY_APP: Final = "app"


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
    remaining_ms: int | None = None  # while paused: what is left of its duration
    pauses: int = 0  # how many times it was paused: the ids of the app's news of them

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Deadline:
        names = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {k: row.get(k) for k in names}
        values["display"] = values.get("display") or {}
        values["pauses"] = values.get("pauses") or 0
        return cls(**values)

    def to_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def open(self) -> bool:
        return self.state in (WAITING_FOREGROUND, RUNNING, PAUSED)

    def told_id(self, news: int) -> str:
        return derive_id(self.operation_id.removeprefix("op_"), news)

    def told_pause(self) -> int | None:
        """The news of its latest pause (paused now) or resume (running after a pause)."""
        if self.state == PAUSED:
            return 2 * self.pauses
        if self.state == RUNNING and self.pauses:
            return 2 * self.pauses + 1
        return None

    def start(self, now_ms: int) -> None:
        self.state, self.started_ms, self.ends_ms = RUNNING, now_ms, now_ms + self.duration_ms

    def due(self, now_ms: int) -> bool:
        return self.state == RUNNING and self.ends_ms is not None and self.ends_ms <= now_ms

    def pause(self, now_ms: int) -> None:
        """It stops counting: what is left is kept, and no deadline runs."""
        assert self.state == RUNNING and self.ends_ms is not None
        self.remaining_ms = max(0, self.ends_ms - now_ms)
        self.state, self.ends_ms, self.pauses = PAUSED, None, self.pauses + 1

    def resume(self, now_ms: int) -> None:
        """It counts again: it ends what was left from now."""
        assert self.state == PAUSED and self.remaining_ms is not None
        self.state, self.ends_ms, self.remaining_ms = RUNNING, now_ms + self.remaining_ms, None

    def finish_early(self, now_ms: int) -> None:
        """Its app ended it now, with its own output as the result."""
        self.state, self.ended_ms, self.noticed_ms = FINISHED, now_ms, now_ms
        self.ended_by, self.remaining_ms = ENDED_BY_APP, None

    def finish(self, now_ms: int) -> None:
        """It ran to its end: it ended at `ends_ms`, whenever the runtime noticed."""
        self.state, self.ended_ms, self.noticed_ms = FINISHED, self.ends_ms, now_ms
        self.ended_by = "deadline"

    def interrupt(self, now_ms: int, by: str) -> None:
        self.state, self.ended_ms, self.noticed_ms, self.ended_by = INTERRUPTED, now_ms, now_ms, by
        self.remaining_ms = None

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
        if self.remaining_ms is not None:
            shown["remaining_ms"] = self.remaining_ms
        if self.ended_by:
            shown["ended_by"] = self.ended_by
        return shown


def shown_deadline(deadline: Deadline, now_ms: int) -> dict[str, Any] | None:
    """The operation as the chat's line for its call shows it: its moments as data (UTC),
    which each of the chat's clients puts on the local clock and counts down itself, so the
    line moves without a word from the runtime. None while it waits for the front."""
    if deadline.state == RUNNING:
        return {"state": RUNNING, "ends_at": timestamp(deadline.ends_ms)}
    if deadline.state == PAUSED:
        return {
            "state": PAUSED,
            "paused_at": timestamp(now_ms),
            "remaining_ms": deadline.remaining_ms or 0,
        }
    if deadline.state in (FINISHED, INTERRUPTED):
        return {"state": deadline.state, "ended_at": timestamp(deadline.ended_ms or now_ms)}
    return None


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
    if deadline.state == PAUSED:
        return f"interrupted by {by}; it was paused with {deadline.remaining_ms} ms left"
    ends = timestamp(deadline.ends_ms)
    return f"interrupted by {by}" + (f"; it was to end at {ends}" if ends else " before it started")
