"""The tool router's side of deadline operations (`_deadlines`): taking one from an app,
starting it once its app is in front, ending it at its deadline or on an interrupt, and
answering an app's questions about its own.

Who may end an operation, and with what final:

- its deadline: the tool router notices `ends_ms` has passed; `lineup.tool.result` with
  `deadline_output`;
- the agent: `lineup.tool.cancel` of the call, or a running call of the same app in the
  same conversation that asks for it (`tool_router.deadline` `interrupt`: a stop tool);
  `lineup.tool.error {cancelled_by_user}` naming it;
- the user: a stop in the chat (`tool_router.interrupt`, from the chat app only); the same,
  naming the user;
- its app, for the user in its surface (`tool_router.deadline` on the operation's call,
  from the process of the operation's app only): `finish` with the app's own output as the
  result (held to the tool's output schema; a misfit is refused and the operation goes
  on), or `user_stop` (`cancelled_by_user`, `ended_by: "app"`); it may also `pause` and
  `resume` it;
- the runtime: the app disabled, removed or updated, or the call's timeout passed before
  the operation started; that code.

The operation's row is written with its call's in one step of the tool router (`_steps`),
so the call's state and its operation's never disagree on disk. The app's reports on the
call are refused (`ownership_mismatch`, audited at most once per
sender every ten seconds): only those actions end it from the app. Whichever end comes
first is the call's one final; a later one finds it ended.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Final, NoReturn

from actors.kernel import Message, derive_id
from contracts import Code, ContractError, InventoryTool, check_tool_output

from ._artifacts import ArtifactRefused, with_artifact_reference
from ._calls import (
    FINAL_STATES,
    SLOT_OPERATION,
    SLOT_SHOWN,
    SLOT_STARTED,
    Call,
    envelope,
    now_ms,
    outbox_item,
)
from ._db import call_row, latest_deadlines
from ._deadlines import (
    CALL_STATE,
    ENDED_BY_APP,
    HANDLING,
    MAX_DISPLAY_BYTES,
    MAX_DURATION_MS,
    PAUSED,
    RUNNING,
    TOLD_ENDED,
    TOLD_STARTED,
    WAITING_FOREGROUND,
    Deadline,
    deadline_output,
    interrupted_detail,
    sample_output,
    shown_deadline,
    timestamp,
)

if TYPE_CHECKING:
    from ._router_face import RouterFace

log = logging.getLogger("lineup.tool_router")
# What an app does to one of its own operations, named by its call (`act`).
OWN_ACTIONS: Final = frozenset({"finish", "pause", "resume", "user_stop"})


class DeadlineOperations:
    def __init__(self, router: RouterFace) -> None:
        self.router = router

    # -- from the call's app ------------------------------------------------------------

    async def take(self, call: Call, msg: Message) -> None:
        """The call's app hands the call over (`kind: deadline`)."""
        body = msg.body
        duration = body.get("duration_ms")
        display = dict(body.get("display") or {})
        if call.operation is not None:
            if (call.operation.duration_ms, call.operation.display) == (duration, display):
                return  # the app's report sent again after its restart: taken already
            await self.refuse(msg, call)
        refusal = self._refusal(call, duration, display)
        if refusal is not None:
            failed = ContractError(Code.HANDLER_FAILED, "the app's deadline cannot be taken")
            await self.router.finish(call, error=failed, audit_detail=refusal)
            return
        running = self._same_tool_open(call) if body.get("alone") else None
        if running is not None:
            await self.router.finish(call, error=_already_running(call, running))
            return
        assert isinstance(duration, int)
        call.operation = Deadline(
            call_id=call.call_id,
            operation_id="op_" + call.slot_id(SLOT_OPERATION),
            app_scope=call.app_scope,
            conversation_id=call.conversation_id,
            instance_id=call.instance_id,
            duration_ms=duration,
            requested_ms=now_ms(),
            display=display,
        )
        call.state = CALL_STATE
        call.note("deadline", duration_ms=duration)
        if self.in_front(call):
            await self._start(call)
        else:  # it starts when its app comes to the front; the call's timeout runs meanwhile
            self.router.write({"calls": [call.to_row()], "deadlines": [call.operation.to_row()]})

    async def refuse(self, msg: Message, call: Call) -> NoReturn:
        """A report of the app on a call the runtime holds: refused, and audited (at most once
        per sender every ten seconds)."""
        await self.router.refuse_report(msg, call, "owned")
        raise ContractError(
            Code.OWNERSHIP_MISMATCH, f"{call.call_id} is the runtime's until its deadline"
        )

    def _refusal(self, call: Call, duration: Any, display: dict[str, Any]) -> str | None:
        """Why the app's deadline cannot be taken (the audit's detail), or None."""
        if call.state != "running":
            return f"{call.call_id} is {call.state}, not running"
        if call.tool.get("handling") != HANDLING:
            return f"{call.method} is not declared handling {HANDLING}"
        if not isinstance(duration, int) or not 1 <= duration <= MAX_DURATION_MS:
            return f"duration_ms {duration!r} is not 1 to {MAX_DURATION_MS}"
        if len(json.dumps(display, separators=(",", ":"))) > MAX_DISPLAY_BYTES:
            return f"display is over {MAX_DISPLAY_BYTES} bytes"
        try:
            check_tool_output(InventoryTool.model_validate(call.tool), sample_output(duration))
        except ContractError as exc:
            return f"the tool's output schema does not take a deadline's result: {exc.detail}"
        return None

    def in_front(self, call: Call) -> bool:
        """Whether the operation may start: its app in front for a foreground tool."""
        if call.tool.get("activation_requirement") != "foreground_required":
            return True
        return call.instance_id is not None and self.router.foreground == call.instance_id

    async def _start(self, call: Call) -> None:
        """Started: recorded with the `started` progress for the agent, in one step."""
        operation = call.operation
        assert operation is not None
        operation.start(now_ms())
        operation.instance_id = call.instance_id
        call.deadline_ms = None  # its deadline, not the call's timeout, ends it now
        ends_at = timestamp(operation.ends_ms)
        call.note("started", ends_ms=operation.ends_ms)
        payload = {"stage": "started", "ends_at": ends_at}
        env = envelope(call, "lineup.tool.progress", payload, id=call.slot_id(SLOT_STARTED))
        self.router.write(
            {
                "calls": [call.to_row()],
                "deadlines": [operation.to_row()],
                "outbox": [outbox_item(env)],
            }
        )
        log.info("call %s: deadline operation started, ends at %s", call.call_id, ends_at)
        await self.router.show(
            call,
            "progress",
            id=call.slot_id(SLOT_SHOWN["started"]),
            stage="started",
            deadline=shown_deadline(operation, now_ms()),
        )
        await self.tell_app(operation, TOLD_STARTED)

    async def answered(self, call: Call) -> None:
        """The app answered a call whose result is the runtime's: it does not count."""
        failed = ContractError(Code.HANDLER_FAILED, f"{call.method} answered a {HANDLING} itself")
        detail = f"{call.app_scope} sent a result for {call.method}, whose result is the runtime's"
        await self.router.finish(call, error=failed, audit_detail=detail)

    def result_is_runtimes(self, call: Call) -> bool:
        """Whether the call's tool is declared to have its result from the runtime."""
        return call.tool.get("handling") == HANDLING

    async def ended(self, call: Call) -> None:
        """Its call has its final: the app hears how the operation ended."""
        assert call.operation is not None
        await self.tell_app(call.operation, TOLD_ENDED)

    async def retell(self, operations: list[Deadline]) -> None:
        """At start: the app hears again what it may not have heard, a start and an end
        recorded just before the tool router stopped (what it did hear is the same message
        again, which its mailbox keeps once)."""
        for operation in operations:
            if operation.started_ms is not None:
                await self.tell_app(operation, TOLD_STARTED)
            paused_or_resumed = operation.told_pause()
            if paused_or_resumed is not None:
                await self.tell_app(operation, paused_or_resumed)
            if not operation.open:
                await self.tell_app(operation, TOLD_ENDED)

    async def tell_app(self, operation: Deadline, news: int) -> None:
        """The operation's app hears how it goes (`app.tool.deadline`: the record, with where
        it runs), to show it; it decides nothing by it."""
        told = {
            **operation.view(),
            "conversation_id": operation.conversation_id,
            "instance_id": operation.instance_id,
        }
        await self.router.cast(
            f"app.{operation.app_scope}",
            "app.tool.deadline",
            told,
            id=operation.told_id(news),
        )

    # -- the runtime's side -------------------------------------------------------------

    async def resume(self, call: Call) -> None:
        """After a restart: one that waited for the front starts if its app is there now
        (one past its deadline ends at the next look of the timer)."""
        operation = call.operation
        if operation is not None and operation.state == WAITING_FOREGROUND and self.in_front(call):
            await self._start(call)

    async def foreground_changed(self) -> None:
        for call in list(self.router.calls.values()):
            operation = call.operation
            waiting = operation is not None and operation.state == WAITING_FOREGROUND
            if waiting and self.in_front(call):
                await self._start(call)

    async def reached(self, now: int) -> None:
        """Every running operation whose deadline has passed ends with its result."""
        for call in list(self.router.calls.values()):
            if call.operation is not None and call.operation.due(now):
                await self._finished(call, now)

    async def _finished(self, call: Call, now: int) -> None:
        operation = call.operation
        assert operation is not None
        operation.finish(now)
        output = deadline_output(operation)
        try:
            check_tool_output(InventoryTool.model_validate(call.tool), output)
        except ContractError as exc:
            failed = ContractError(
                Code.HANDLER_FAILED, "the deadline's result does not fit the tool's schema"
            )
            await self.router.finish(call, error=failed, audit_detail=exc.detail)
            return
        await self.router.finish(call, output=output)

    async def interrupt(self, call: Call, by: str, ended_by: str | None = None) -> bool:
        """End an open call early for `by` (the agent, the user): `cancelled_by_user`, and
        its app is told to stop whatever it still runs for it; its operation's record says
        `ended_by` (`by` unless given). An operation whose deadline passed before (the tool
        router had not looked yet, or was down) ended then: it ends with its result, the
        interrupt finds it ended, and the answer is True."""
        operation = call.operation
        now = now_ms()
        if operation is not None and operation.due(now):
            await self._finished(call, now)
            return True
        if operation is not None and operation.open:
            detail = interrupted_detail(operation, by)
            operation.interrupt(now, ended_by or by)
        else:
            detail = f"cancelled by {by}"
        await self.router.finish(call, error=ContractError(Code.CANCELLED_BY_USER, detail))
        await self.router.tell_app_ended(call)
        return False

    # -- an app's questions, the user's stop ---------------------------------------------

    async def request(self, msg: Message) -> dict[str, Any]:
        """`tool_router.deadline`: an app asks about its operations in the conversation of
        one of its running calls, or interrupts them on behalf of that call (the agent's);
        or acts on one of its own (`act`)."""
        if msg.body["action"] in OWN_ACTIONS:
            return await self.act(msg)
        call = self.router.calls.get(str(msg.body["call_id"]))
        if call is None or msg.sender != f"app.{call.app_scope}" or call.state != "running":
            # The same answer for another app's call as for none: nothing says it exists.
            held = call is not None and call.operation is not None
            own = call is not None and msg.sender == f"app.{call.app_scope}"
            await self.router.refuse_report(msg, call, "owned" if own and held else "foreign")
            raise ContractError(
                Code.OWNERSHIP_MISMATCH, f"{msg.body['call_id']} is not a running call of yours"
            )
        if msg.body["action"] == "interrupt":
            ended = []
            for target in self._open(call.app_scope, call.conversation_id):
                await self.interrupt(target, f"the agent ({call.method}, call {call.call_id})")
                assert target.operation is not None
                ended.append(target.operation.view())
            return {"interrupted": ended}
        rows = latest_deadlines(self.router.db, call.app_scope, call.conversation_id)
        return {"deadlines": [Deadline.from_row(row).view() for row in rows]}

    # -- its app's actions on it: the user's, through the app's surface ------------------

    async def act(self, msg: Message) -> dict[str, Any]:
        """The operation's app finishes, pauses, resumes or stops it (for the user). Whose
        it is comes from the sender's stamped scope, never the body: any other sender gets
        the same refusal as for no operation, so nothing says it exists."""
        body, now = msg.body, now_ms()
        call = self.router.calls.get(str(body["call_id"]))
        if call is None or call.operation is None or msg.sender != f"app.{call.app_scope}":
            if body["action"] == "finish" and await self._ended_of(msg):
                return {"finished": False}
            if call is not None and msg.sender != f"app.{call.app_scope}":
                await self.router.refuse_report(msg, call, "foreign")
            raise _not_yours(body["call_id"])
        operation = call.operation
        if operation.due(now):  # its deadline passed before this: it ended then
            await self._finished(call, now)
        if body["action"] == "finish":
            return {"finished": await self._finish_early(call, body.get("output") or {})}
        if not operation.open:
            raise _not_yours(call.call_id)
        if body["action"] == "user_stop":
            await self.interrupt(call, "the user, through the app", ENDED_BY_APP)
        elif body["action"] == "pause":
            await self._pause(call, now)
        elif operation.state == PAUSED:
            await self._resume_counting(call, now)
        return {"deadline": operation.view()}

    async def _ended_of(self, msg: Message) -> bool:
        """Whether the call is a deadline operation of the sender's that has ended."""
        row = call_row(self.router.db, str(msg.body["call_id"]))
        return (
            row is not None
            and msg.sender == f"app.{row['app_scope']}"
            and row["state"] in FINAL_STATES
            and any(step.get("event") == "deadline" for step in row.get("history") or [])
        )

    async def _finish_early(self, call: Call, output: dict[str, Any]) -> bool:
        """The app's output as the call's result, if it fits the tool's output schema (and
        names only the app's own artifact); a misfit is refused and the operation goes on.
        False if the operation had ended."""
        operation = call.operation
        assert operation is not None
        if not operation.open:
            return False
        try:
            check_tool_output(InventoryTool.model_validate(call.tool), output)
        except ContractError as exc:
            misfit = f"the output does not fit {call.method}'s schema: {exc.detail}"
            raise ContractError(Code.INVALID_PAYLOAD, misfit) from None
        try:
            output = await with_artifact_reference(self.router, call, output)
        except ArtifactRefused:
            raise ContractError(
                Code.INVALID_PAYLOAD, "the output names an artifact this app cannot hand"
            ) from None
        now = now_ms()
        if operation.due(now):  # it ran out while the artifact was looked up
            await self._finished(call, now)
        if not operation.open or call.done:
            return False
        operation.finish_early(now)
        await self.router.finish(call, output=output, from_app=True)
        return True

    async def _pause(self, call: Call, now: int) -> None:
        operation = call.operation
        assert operation is not None
        if operation.state == WAITING_FOREGROUND:
            raise ContractError(
                Code.FOREGROUND_REQUIRED,
                f"{call.call_id} has not started (it waits for its app in front): only a"
                " running operation can be paused",
            )
        if operation.state != RUNNING:
            return  # paused already
        operation.pause(now)
        call.note("paused", remaining_ms=operation.remaining_ms)
        seconds = round((operation.remaining_ms or 0) / 1000)
        await self._counting_changed(call, {"stage": "paused", "message": f"{seconds} s left"})

    async def _resume_counting(self, call: Call, now: int) -> None:
        operation = call.operation
        assert operation is not None
        operation.resume(now)
        call.note("resumed", ends_ms=operation.ends_ms)
        ends_at = timestamp(operation.ends_ms)
        await self._counting_changed(call, {"stage": "resumed", "ends_at": ends_at})

    async def _counting_changed(self, call: Call, progress: dict[str, Any]) -> None:
        """A pause or resume: recorded with the agent's progress about it in one step (its
        id derived from the news, so each pause and resume is one envelope), and told to
        the app."""
        operation = call.operation
        assert operation is not None
        news = operation.told_pause()
        assert news is not None
        env = envelope(
            call, "lineup.tool.progress", progress, id=derive_id(operation.told_id(news), 0)
        )
        self.router.write(
            {
                "calls": [call.to_row()],
                "deadlines": [operation.to_row()],
                "outbox": [outbox_item(env)],
            }
        )
        log.info("call %s: deadline operation %s", call.call_id, operation.state)
        # The chat's line for the call says the same: paused with the time left, or until
        # when it runs again (its id derived from the news too: shown once).
        await self.router.show(
            call,
            "progress",
            id=derive_id(operation.told_id(news), 1),
            deadline=shown_deadline(operation, now_ms()),
        )
        await self.tell_app(operation, news)

    def _same_tool_open(self, call: Call) -> Call | None:
        """The open operation of the call's tool in its conversation, if one is: the tool
        router takes handovers one at a time, so two calls racing to start one cannot both
        see none."""
        for other in self._open(call.app_scope, call.conversation_id):
            if other.method == call.method and other is not call:
                return other
        return None

    def _open(self, app_scope: str, conversation_id: str) -> list[Call]:
        return [
            c
            for c in self.router.calls.values()
            if c.operation is not None
            and c.operation.open
            and (c.app_scope, c.conversation_id) == (app_scope, conversation_id)
        ]

    async def user_stop(self, msg: Message) -> dict[str, Any] | None:
        """`tool_router.interrupt`: the user stops a call in the chat. A call that has
        ended keeps its outcome, which is the answer."""
        call_id = str(msg.body["call_id"])
        call = self.router.calls.get(call_id)
        if call is not None:
            await self.interrupt(call, "the user")
        row = call_row(self.router.db, call_id)  # as this step leaves it
        if row is None:
            return None
        return {"call_id": call_id, "state": row["state"], "code": row["code"]}


def _already_running(call: Call, running: Call) -> ContractError:
    """The refusal of a handover while `running` is open: until when it runs, and how to
    end it first."""
    operation = running.operation
    assert operation is not None
    if operation.state == PAUSED:
        until = f"paused with {round((operation.remaining_ms or 0) / 1000)} s left"
    elif operation.ends_ms is not None:
        until = f"running until {timestamp(operation.ends_ms)}"
    else:
        until = "waiting for its app in front"
    return ContractError(
        Code.ALREADY_RUNNING,
        f"{call.method} already has an operation {until} in this conversation (call"
        f" {running.call_id}): wait for it to end, or stop it first (cancel that call, or"
        " use the app's stop tool)",
    )


def _not_yours(call_id: object) -> ContractError:
    return ContractError(
        Code.OWNERSHIP_MISMATCH, f"{call_id} is not an open deadline operation of yours"
    )
