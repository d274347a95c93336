"""The pomodoro app: one focus timer per conversation, kept by the runtime.

A timer is a deadline operation: `pomodoro.start` (of `minutes`, or of `seconds` for a short
one) hands its call to the runtime, which
starts it once the timer's app is in front (the agent then gets `started`, with when it
ends), ends it at that moment with the one result, and stops it early when the agent or the
user interrupts it. One timer at a time per conversation: a start while one is open is
refused by the runtime as it takes the handover (`already_running`), and the open one goes
on. The app never counts the time itself, so a timer outlives the app's
process, the runtime's restarts and its own end while nothing ran.

The `timer` entrypoint's surface (`ui/`) shows the countdown, "Done" once the time is up,
and has the user's buttons:
Pause, Resume and Interrupt emit the events `pause`, `resume` and `interrupt` ({}), and the
app asks the runtime to pause, resume or stop (`cancelled_by_user`) the timer the instance
shows. The surface names no call: it can act only on its own instance's timer.

What the app keeps is only what it shows, in its instance's session data: the timer's
state, its length, when it ends and ended, and what is left while it is paused (`{state,
minutes | seconds, call_id, ends_at?, ended_at?, remaining_ms?}`), written each time the
runtime says it started, paused, resumed or ended.

The countdown is computed from `ends_at`, or from the `remaining_ms` of a paused timer; a
timer that ran out says "Done" in its frame, with when it ended on the local clock, and
has no buttons left. `pomodoro.start` hands its call over with display `{minutes}` or
`{seconds}` and `alone` (one timer at a time); `pomodoro.status` reads the runtime's
record; `pomodoro.stop` interrupts it for the agent.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from apps.sdk import CallFailed, RuntimeApp, ToolCall, declare_app, tool

log = logging.getLogger("lineup.app")

_NO_ARGUMENTS = {"type": "object", "additionalProperties": False}
_MOMENT = {"type": "string"}
# The runtime's result when a timer ran to its end.
_FINISHED = {
    "type": "object",
    "properties": {
        "state": {"const": "finished"},
        "started_at": _MOMENT,
        "ends_at": _MOMENT,
        "ended_at": _MOMENT,
        "noticed_at": _MOMENT,
    },
    "required": ["state", "started_at", "ends_at", "ended_at"],
    "additionalProperties": False,
}
_SESSION = {
    "type": "object",
    "properties": {
        "state": {"enum": ["idle", "waiting", "running", "paused", "finished", "stopped"]},
        "minutes": {"type": "integer", "minimum": 1, "maximum": 120},
        "seconds": {"type": "integer", "minimum": 5, "maximum": 3600},
        "remaining_seconds": {"type": "integer", "minimum": 0},
        "ends_at": _MOMENT,
        "ended_at": _MOMENT,
    },
    "required": ["state"],
    "additionalProperties": False,
}
# The runtime's states of a deadline operation, as the timer names them.
_STATES = {
    "waiting_foreground": "waiting",
    "running": "running",
    "paused": "paused",
    "finished": "finished",
    "interrupted": "stopped",
}
# What the surface's buttons emit: no payload, so a surface cannot name a call of its own.
_BUTTONS = ("pause", "resume", "interrupt")
_TIMER_EVENTS = [
    {"name": name, "payload_schema": {"type": "object", "additionalProperties": False}}
    for name in _BUTTONS
]


def _seconds_until(moment: str, now: float) -> int:
    ends = datetime.fromisoformat(moment.replace("Z", "+00:00")).timestamp()
    return max(0, math.ceil(ends - now))


def _length(operation: dict[str, Any]) -> dict[str, int]:
    """How long the timer was asked for, as it was asked: {minutes} or {seconds}."""
    display = operation.get("display", {})
    return {k: display[k] for k in ("minutes", "seconds") if isinstance(display.get(k), int)}


def _display(operation: dict[str, Any]) -> dict[str, Any]:
    """What the timer's instance shows of the runtime's record of it."""
    shown: dict[str, Any] = {
        "state": _STATES.get(operation["state"], "idle"),
        "call_id": operation["call_id"],
        **_length(operation),
    }
    for moment in ("ends_at", "ended_at"):
        if operation.get(moment):
            shown[moment] = operation[moment]
    if operation["state"] == "paused" and isinstance(operation.get("remaining_ms"), int):
        shown["remaining_ms"] = operation["remaining_ms"]
    return shown


@declare_app(
    app_scope="pomodoro",
    version="0.1.0",
    title="Pomodoro",
    entrypoints=[
        {
            "id": "timer",
            "kind": "contextual",
            "surface": "ui/index.html",
            "surface_events": _TIMER_EVENTS,
            # On the stage while the agent brings it in front; afloat over the chat after.
            "display_modes": ["stage", "pip"],
        }
    ],
    required_features=["app.lifecycle.v1", "app.tools.v1", "app.session-data.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class PomodoroApp(RuntimeApp):
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._clock = clock

    async def on_app_start(self) -> None:
        self.sdk.tools.on_deadline(self._timer_changed)
        for button in _BUTTONS:
            self.sdk.surface.on_event(button, partial(self._pressed, button))

    async def _pressed(self, button: str, payload: dict[str, Any], instance_id: str) -> None:
        """The user pressed `button` on the instance's surface: the runtime pauses, resumes
        or stops the timer the instance shows, and tells the app (`on_deadline`), whose
        display then follows. A press the timer's state does not allow any more (it ended
        or changed meanwhile) changes nothing."""
        shown = (await self.sdk.session_data.get(instance_id=instance_id))["data"] or {}
        call_id = shown.get("call_id")
        if not isinstance(call_id, str):
            return
        tools = self.sdk.tools
        act = {
            "pause": tools.pause_deadline,
            "resume": tools.resume_deadline,
            "interrupt": tools.interrupt_deadline,
        }[button]
        try:
            await act(call_id)
        except CallFailed as exc:
            log.info("%s of timer %s not taken: %s", button, call_id, exc.code)

    async def _timer_changed(self, operation: dict[str, Any]) -> None:
        """The runtime started, paused, resumed or ended a timer: what the instance shows
        follows. The runtime runs one timer at a time in a conversation and tells its news
        in order, so news of a start, pause or resume is of the current timer; the end of
        another timer than the one shown (an older one) changes nothing."""
        shown = _display(operation)
        instance_id = operation.get("instance_id")
        if instance_id is None:
            return
        ended = operation["state"] not in ("running", "paused")
        await self._show(str(instance_id), shown, only_call=operation["call_id"] if ended else "")

    async def _show(self, instance_id: str, shown: dict[str, Any], only_call: str = "") -> None:
        """Write the display state of the instance; with `only_call`, only while it shows
        that call's timer (or none)."""
        for _ in range(3):  # a write that lost a race with another: read again, write again
            try:
                current = await self.sdk.session_data.get(instance_id=instance_id)
                showing = (current["data"] or {}).get("call_id")
                if only_call and showing not in (None, only_call):
                    return
                await self.sdk.session_data.replace(
                    shown, current["revision"], instance_id=instance_id
                )
            except CallFailed as exc:
                if exc.code != "revision_conflict":  # the instance closed: nothing shows it
                    log.info("timer of %s not shown: %s", instance_id, exc.code)
                    return
            else:
                return

    def _session(self, operation: dict[str, Any] | None) -> dict[str, Any]:
        """The timer as `pomodoro.status` tells it, from the runtime's record."""
        if operation is None:
            return {"state": "idle"}
        session: dict[str, Any] = {
            "state": _STATES.get(operation["state"], "idle"),
            **_length(operation),
        }
        if operation.get("ends_at"):
            session["ends_at"] = operation["ends_at"]
        if operation["state"] == "running" and operation.get("ends_at"):
            session["remaining_seconds"] = _seconds_until(operation["ends_at"], self._clock())
        if operation["state"] == "paused" and isinstance(operation.get("remaining_ms"), int):
            session["remaining_seconds"] = math.ceil(operation["remaining_ms"] / 1000)
        if operation.get("ended_at"):
            session["ended_at"] = operation["ended_at"]
        return session

    @tool(
        "pomodoro.start",
        title="Start a focus timer",
        input_schema={
            "type": "object",
            "properties": {
                "minutes": {"type": "integer", "minimum": 1, "maximum": 120},
                "seconds": {"type": "integer", "minimum": 5, "maximum": 3600},
            },
            # One length: whole minutes for a focus, or seconds for a short timer.
            "oneOf": [{"required": ["minutes"]}, {"required": ["seconds"]}],
            "additionalProperties": False,
        },
        output_schema=_FINISHED,
        call_model="operation",
        # Its result is the runtime's: the timer is a deadline operation.
        handling="runtime_operation",
        risk="low",
        # The user should see the timer they just asked for.
        activation_requirement="foreground_required",
        launch_policy={"launch": "if_needed", "focus": "foreground"},
    )
    async def start(self, arguments: dict[str, Any]) -> Any:
        """Starts a timer of `minutes` (or of `seconds`, for a short one: give one of the
        two). Progress `started` (with `ends_at`) says it runs;
        the result comes when it has run out. One timer at a time: while one is waiting,
        running or paused, this is refused (`already_running`, saying until when it runs)
        and that timer goes on; stop it first with `pomodoro.stop`. The user may pause and
        resume it on the timer's surface, or interrupt it there (`cancelled_by_user`)."""
        length: dict[str, Any] = {
            key: int(arguments[key]) for key in ("minutes", "seconds") if key in arguments
        }
        seconds = length.get("seconds") or 60 * length["minutes"]
        return self.sdk.tools.deadline(seconds, display=length, alone=True)

    @tool(
        "pomodoro.status",
        title="Focus timer status",
        input_schema=_NO_ARGUMENTS,
        output_schema=_SESSION,
        call_model="query",
        idempotent=True,
        risk="low",
        launch_policy={"launch": "if_needed", "focus": "background"},
        annotations={"read_only_hint": True},
    )
    async def status(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """The latest timer: idle (none yet), waiting (to come to the front), running or
        paused (with the time left), finished, or stopped."""
        operations = await call.deadlines()
        return self._session(operations[0] if operations else None)

    @tool(
        "pomodoro.stop",
        title="Stop the focus timer",
        input_schema=_NO_ARGUMENTS,
        output_schema={
            "type": "object",
            "properties": {"stopped": {"type": "boolean"}},
            "required": ["stopped"],
            "additionalProperties": False,
        },
        idempotent=True,
        risk="low",
        # Offered where the timer's app has an instance: there it may have a timer to stop.
        launch_policy={"launch": "never"},
    )
    async def stop(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Stops the timer; `stopped` says whether one was running. The timer's own call
        then ends with `cancelled_by_user`."""
        return {"stopped": bool(await call.interrupt_deadlines())}
