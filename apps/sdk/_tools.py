"""Agent tools in an app process: each call recorded, run by its handler, reported once.

The tool router casts `app.tool.invoke` {`call_id`, `method`, `arguments`, `app_scope`,
`conversation_id`, `instance_id`} once it has decided that a call may run, and
`app.tool.cancel` {`call_id`} once the runtime has ended one. The app answers with casts of
`tool_router.report`, closed bodies of four kinds: {`call_id`, `kind`: `progress`,
`stage`?, `percent`?, `message`?}, {`call_id`, `kind`: `result`, `output`}, {`call_id`,
`kind`: `error`, `code`, `message`?} and {`call_id`, `kind`: `deadline`, `duration_ms`,
`display`, `alone`?}.

- A call is recorded in the app's log (`tool_calls`, running) before its handler runs, and
  the invoke is acked once that is on disk. An invoke of a call already recorded never
  runs the handler again; a finished call's final report is sent again instead.
- Each handler runs in a task of the actor's nursery: the mailbox goes on, many calls run
  at once. What it asks of the SDK gets ids derived from its call's first invoke, so an
  idempotent call run again asks nothing twice.
- A dict returned is the result; `PENDING` leaves the call open for `complete` / `fail`;
  `sdk.tools.deadline(seconds, display)` hands the call to the runtime, which ends it at
  that deadline (its result is the runtime's: when it started, was to end, ended) or when
  the agent or the user interrupts it; the app can no longer end it (`complete`, `fail`
  and `progress` are refused). With `alone=True` the runtime refuses it
  (`already_running`) while the same tool has an open operation in the conversation: one
  at a time, decided as the runtime takes it. A running call can ask the runtime about the app's
  deadline operations in its conversation (`call.deadlines()`) or interrupt them for the
  agent (`call.interrupt_deadlines()`, a stop tool's way). For the user in its surface, the
  app acts on an open one of its own by its call id: `finish_deadline` (its own output as
  the result, held to the output schema), `pause_deadline` / `resume_deadline` (it stops
  counting, keeping `remaining_ms`, and counts again from then) and `interrupt_deadline`
  (`cancelled_by_user`, `ended_by: "app"`). `sdk.tools.on_deadline(listener)` hears each
  start, pause, resume and end of them (`app.tool.deadline`, from the tool router only). A
  `ContractError` with a code of `APP_TOOL_ERROR_CODES` is that error. Anything else
  (another exception, another value, an output that cannot be sent) is `handler_failed`
  with a message naming no exception: the traceback goes to the app's log.
- Report n of a call has the kernel id `derive_id(call_id, n)`; n is taken in the log before
  the report is sent, and the final report is written with its index in the write that
  ends the call. Sent again, it is the same message, which the mailbox keeps once. That
  write is not synced (the runtime makes a call's first final durable before the agent
  hears it): one a power cut takes leaves the call running, ended again at start under the
  same index.
- At start, a call recorded running (its handler had not returned) runs again if its tool
  is idempotent or declared `rerun_after_restart`; otherwise it ends `handler_failed`,
  since it may have done part of its work. The final report of every call finished
  within the mailbox's dedup window is sent again: the last ones may not have left the
  process, and the runtime keeps a call's first final only. A pending call stays open:
  the app finishes it from what it kept.
- `app.tool.cancel` (the runtime ended the call: a cancel, a stop, or its timeout passed)
  ends an open call without a report and cancels its handler; the capability requests it
  asked and the user has not answered are taken back.
- A `surface_bridge` tool's handler runs first, as the app's gate: it may answer (a dict)
  or refuse (a `ContractError`) itself; `None` hands the call to the app's surface. The
  call is then left pending and pushed to the web host with its arguments
  (`sdk.surface`), and offered again to each surface of its instance that becomes ready
  and after a restart of the app, until the surface ends it (`tool.result` / `tool.error`
  over the bridge, taken only for an open call of that instance) or the runtime does (its
  timeout, a cancel). The surface's answer is then reported as the handler's would be.
"""

from __future__ import annotations

import enum
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import trio

from actors.kernel import derive_id
from contracts import APP_TOOL_ERROR_CODES, Code, ContractError, ToolProgress

from ._capabilities import ASKING_CALL
from ._tool_table import BoundHandler, declared_tools

if TYPE_CHECKING:
    from ._app_core import AppCore

log = logging.getLogger("lineup.app")

TOOL_ROUTER: Final = "tool_router"
RESEND_WINDOW_NS: Final = 24 * 3600 * 10**9  # the mailbox's dedup window; older rows go
# Under the largest body an app may send (256 KiB): the supervisor would refuse a larger
# report, and the call would never end.
MAX_REPORT_BYTES: Final = 250 * 1024
MAX_TEXT: Final = 4096
# JSON proper (no NaN): what the runtime checks against the tool's output schema.
_encode: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


class Pending(enum.Enum):
    """What a handler returns to end its call later (`sdk.tools.complete` / `fail`), and
    what a `surface_bridge` call becomes once handed to the surface."""

    PENDING = "pending"
    TO_SURFACE = "to_surface"

    def __repr__(self) -> str:
        return self.name


PENDING: Final = Pending.PENDING
TO_SURFACE: Final = Pending.TO_SURFACE
DeadlineListener = Callable[[dict[str, Any]], Awaitable[None] | None]
MAX_DISPLAY_BYTES: Final = 4096  # the runtime keeps a deadline's display up to this size
DEADLINE_TIMEOUT_S: Final = 30.0  # a question about deadlines waits this long for its answer


@dataclass(frozen=True)
class Deadline:
    """What a handler returns to hand its call to the runtime until a deadline
    (`sdk.tools.deadline`)."""

    duration_ms: int
    display: dict[str, Any]
    alone: bool = False

    def report(self, call_id: str) -> dict[str, Any]:
        report = {
            "call_id": call_id,
            "kind": "deadline",
            "duration_ms": self.duration_ms,
            "display": self.display,
        }
        if self.alone:
            report["alone"] = True
        return report


@dataclass(frozen=True)
class ToolCall:
    """One call, as given to a handler that takes it after the arguments."""

    call_id: str
    method: str
    arguments: dict[str, Any]
    app_scope: str
    conversation_id: str
    instance_id: str | None
    _tools: ToolsAPI = field(repr=False, compare=False)

    async def progress(
        self, stage: str | None = None, percent: int | None = None, message: str | None = None
    ) -> None:
        await self._tools.progress(self.call_id, stage, percent, message)

    async def deadlines(self) -> list[dict[str, Any]]:
        """The app's latest deadline operations in this call's conversation, newest first:
        each {`call_id`, `operation_id`, `state` (waiting_foreground, running, paused,
        finished, interrupted), `duration_ms`, `display`, `started_at`?, `ends_at`? (not
        while paused), `remaining_ms`? (while paused), `ended_at`?, `ended_by`?}, as the
        runtime recorded them."""
        reply = await self._tools._ask_deadlines(self.call_id, "list")
        return list(reply["deadlines"])

    async def interrupt_deadlines(self) -> list[dict[str, Any]]:
        """Interrupt the app's open deadline operations in this call's conversation, for
        the agent that made this call (a stop tool); those it ended, as recorded."""
        reply = await self._tools._ask_deadlines(self.call_id, "interrupt")
        return list(reply["interrupted"])


def _takes_call(handler: BoundHandler) -> bool:
    kinds = [p.kind for p in inspect.signature(handler).parameters.values()]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return inspect.Parameter.VAR_POSITIONAL in kinds or sum(k in positional for k in kinds) >= 2


def _error(call_id: str, code: Code, message: str = "") -> dict[str, Any]:
    report: dict[str, Any] = {"call_id": call_id, "kind": "error", "code": code.value}
    if message:
        report["message"] = message[:MAX_TEXT]
    return report


def _result(call_id: str, output: object) -> dict[str, Any]:
    if isinstance(output, dict):
        return {"call_id": call_id, "kind": "result", "output": output}
    log.error("tool call %s: the output is a %s, not a dict", call_id, type(output).__name__)
    return _error(call_id, Code.HANDLER_FAILED, "the output is not an object")


def _sendable(call_id: str, report: dict[str, Any]) -> str:
    """The report as JSON, or a `handler_failed` in its place if it cannot be sent."""
    try:
        text = _encode(report)
    except (TypeError, ValueError):
        log.exception("tool call %s: the output is not JSON", call_id)
        return _encode(_error(call_id, Code.HANDLER_FAILED, "the output is not JSON"))
    size = len(text.encode())
    if size > MAX_REPORT_BYTES:
        log.error("tool call %s: a report of %d bytes is too large to send", call_id, size)
        return _encode(_error(call_id, Code.HANDLER_FAILED, "the output is too large to send"))
    return text


def _handed(invoke: dict[str, Any]) -> dict[str, Any]:
    """What a surface is handed of a call: its id, method, arguments and instance."""
    return {key: invoke.get(key) for key in ("call_id", "method", "arguments", "instance_id")}


def _not_open(call_id: str) -> ContractError:
    return ContractError(Code.OWNERSHIP_MISMATCH, f"{call_id} is not an open call of this app")


class ToolsAPI:
    """`sdk.tools`: progress on the app's open calls, and their late end (see above)."""

    PENDING: Final = PENDING

    def __init__(self, app: AppCore) -> None:
        self._app = app
        self._declared = declared_tools(type(app))
        self._for_surface = frozenset(
            method
            for method, declared in self._declared.items()
            if declared.descriptor.delivery == "surface_bridge"
        )
        self._running: dict[str, trio.CancelScope] = {}
        self._deadline_listeners: list[DeadlineListener] = []

    async def progress(
        self,
        call_id: str,
        stage: str | None = None,
        percent: int | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on an open call of this app (`ownership_mismatch` otherwise);
        the fields are checked as the runtime checks them (a `ValueError` if not)."""
        fields = ToolProgress(stage=stage, percent=percent, message=message)
        report = {"call_id": call_id, "kind": "progress", **fields.model_dump(exclude_none=True)}
        index = self._app._log.take_report_index(call_id)
        if index is None:
            raise _not_open(call_id)
        await self._send(call_id, index, report)

    async def complete(self, call_id: str, output: dict[str, Any]) -> None:
        """End an open call of this app with its result (`ownership_mismatch` otherwise)."""
        if not await self._finish(call_id, _result(call_id, output)):
            raise _not_open(call_id)

    def deadline(
        self, seconds: float, display: dict[str, Any] | None = None, *, alone: bool = False
    ) -> Deadline:
        """What a handler returns to hand its call to the runtime until `seconds` after the
        runtime starts it (in front, for a foreground tool). `display` (JSON, at most 4 KiB)
        is kept with the operation for the app's own view of it (`call.deadlines()`).
        `alone`: the tool runs one operation at a time in a conversation; while one is
        open, the runtime refuses this one (`already_running`, saying until when the open
        one runs) and the open one goes on. The runtime decides it as it takes the
        handover, so two calls racing to start one cannot both start."""
        duration_ms = round(seconds * 1000)
        if not 1 <= duration_ms <= 86_400_000:
            raise ValueError("a deadline is 1 ms to a day away")
        shown = dict(display or {})
        if len(_encode(shown).encode()) > MAX_DISPLAY_BYTES:
            raise ValueError(f"a deadline's display is at most {MAX_DISPLAY_BYTES} bytes")
        return Deadline(duration_ms, shown, alone)

    async def fail(self, call_id: str, code: Code | str, message: str | None = None) -> None:
        """End an open call of this app with an error of `APP_TOOL_ERROR_CODES`."""
        if code not in APP_TOOL_ERROR_CODES:
            raise ValueError(f"{code!r} is not a code an app may end a call with")
        if not await self._finish(call_id, _error(call_id, Code(code), message or "")):
            raise _not_open(call_id)

    async def stop_for_user(self, call_id: str) -> None:
        """The user's stop of an open call (the chat app's, which speaks for the user: the
        runtime takes it from no other app). It ends with `cancelled_by_user`."""
        body = {"call_id": call_id}
        await self._app.cast(TOOL_ROUTER, "tool_router.interrupt", body, id=self._app._ids.next())

    def on_deadline(self, listener: DeadlineListener) -> Callable[[], None]:
        """Call `listener(operation)` each time one of the app's deadline operations starts,
        pauses, resumes or ends, with the runtime's record of it (as `call.deadlines()`
        gives it, plus its `conversation_id` and `instance_id`), at least once: after a
        restart of the app it may see one again. Returns the unsubscribe."""
        self._deadline_listeners.append(listener)
        return lambda: self._deadline_listeners.remove(listener)

    async def _deadline_changed(self, operation: dict[str, Any]) -> None:
        for listener in list(self._deadline_listeners):
            result = listener(operation)
            if inspect.isawaitable(result):
                await result

    async def finish_deadline(self, call_id: str, output: dict[str, Any]) -> bool:
        """End an open deadline operation of this app now, with `output` as the call's one
        result (held to the tool's output schema: a misfit is refused, `invalid_payload`,
        and the operation goes on). False if it had ended already (at its deadline, or
        interrupted); `ownership_mismatch` if it is not this app's."""
        if len(_encode(output).encode()) > MAX_REPORT_BYTES:
            raise ValueError(f"an output is at most {MAX_REPORT_BYTES} bytes")
        reply = await self._ask_deadlines(call_id, "finish", output)
        return bool(reply["finished"])

    async def pause_deadline(self, call_id: str) -> dict[str, Any]:
        """Stop a running deadline operation of this app from counting (the user's pause):
        its record, state `paused` with `remaining_ms`. One paused already is answered as
        it is; one waiting for its app in front cannot be paused (`foreground_required`);
        `ownership_mismatch` for one not open or not this app's."""
        return dict((await self._ask_deadlines(call_id, "pause"))["deadline"])

    async def resume_deadline(self, call_id: str) -> dict[str, Any]:
        """Let a paused deadline operation of this app count again: it ends `remaining_ms`
        from now (its record, with the new `ends_at`). One not paused is answered as it is."""
        return dict((await self._ask_deadlines(call_id, "resume"))["deadline"])

    async def interrupt_deadline(self, call_id: str) -> dict[str, Any]:
        """End an open deadline operation of this app as the user's stop, through the app:
        the agent gets `cancelled_by_user`; its record says `ended_by: "app"`."""
        return dict((await self._ask_deadlines(call_id, "user_stop"))["deadline"])

    async def _ask_deadlines(
        self, call_id: str, action: str, output: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"call_id": call_id, "action": action}
        if output is not None:
            body["output"] = output
        reply = await self._app.call(
            TOOL_ROUTER,
            "tool_router.deadline",
            body,
            timeout=DEADLINE_TIMEOUT_S,
            id=self._app._ids.next(),
        )
        return dict(reply)

    # -- the runtime's side: RuntimeApp's handlers and its start --------------------------

    async def _invoke(self, invoke_id: str, body: dict[str, Any]) -> None:
        known = self._app._log.add_tool_call(invoke_id, body)
        if known is None:
            await self._start(invoke_id, body)
        elif known["report"] is not None:
            await self._send(known["call_id"], known["reports"] - 1, known["report"])

    async def _cancel(self, call_id: str) -> None:
        self._app._log.finish_tool_call(call_id, None)
        scope = self._running.get(call_id)
        if scope is not None:
            scope.cancel()
        await self._app.sdk.capabilities._withdraw(calls=(call_id,))

    def _runs_again(self, row: dict[str, Any]) -> bool:
        """Whether a call the restart cut short runs again (else it ends handler_failed)."""
        declared = self._declared.get(row["method"])
        again = declared is not None and (declared.descriptor.idempotent or declared.runs_again)
        return row["report"] is None and row["state"] == "running" and again

    async def _restart(self) -> None:
        app_log = self._app._log
        app_log.prune_tool_calls(time.time_ns() - RESEND_WINDOW_NS)
        rows = app_log.tool_calls()
        # What the last incarnation asked and was not answered: taken back, but for the
        # calls that run again, which ask again with the same request ids.
        rerun = {row["call_id"] for row in rows if self._runs_again(row)}
        await self._app.sdk.capabilities._withdraw(keep=rerun)
        for row in rows:
            call_id, method = row["call_id"], row["method"]
            if row["report"] is not None:
                await self._send(call_id, row["reports"] - 1, row["report"])
            elif row["state"] == "pending" and method in self._for_surface:
                await self._app.sdk.surface._hand_call(_handed(row["body"]))
            elif row["state"] != "running":
                continue
            elif call_id in rerun:
                log.info("tool call %s (%s) runs again after a restart", call_id, method)
                await self._start(row["invoke_id"], row["body"])
            else:
                log.warning("tool call %s (%s) was cut short by a restart", call_id, method)
                stopped = "the app stopped while running it"
                await self._finish(call_id, _error(call_id, Code.HANDLER_FAILED, stopped))

    async def _start(self, invoke_id: str, body: dict[str, Any]) -> None:
        call_id, method = str(body["call_id"]), str(body["method"])
        declared = self._declared.get(method)
        if declared is None:
            missing = _error(call_id, Code.HANDLER_FAILED, f"no handler for {method}")
            await self._finish(call_id, missing)
            return
        call = ToolCall(
            call_id=call_id,
            method=method,
            arguments=dict(body.get("arguments") or {}),
            app_scope=str(body.get("app_scope") or self._app.sdk.app.app_scope),
            conversation_id=str(body.get("conversation_id") or ""),
            instance_id=body.get("instance_id"),
            _tools=self,
        )
        # Registered before the task starts: a cancel handled first still reaches it.
        scope = self._running[call_id] = trio.CancelScope()
        handler = getattr(self._app, declared.handler)
        # The first id derived from the invoke is the seed of the call's own ids.
        self._app.nursery.start_soon(self._run, call, handler, scope, derive_id(invoke_id, 0))

    async def _run(
        self, call: ToolCall, handler: BoundHandler, scope: trio.CancelScope, seed: str
    ) -> None:
        outcome: dict[str, Any] | Pending | None = None  # None: cancelled, recorded so
        ASKING_CALL.set(call.call_id)  # this task's own context: its handler's requests
        try:
            with scope, self._app._ids.deriving(seed):
                outcome = await self._outcome(call, handler)
        finally:
            self._running.pop(call.call_id, None)
        if outcome is not None:  # what its handler asked and did not wait for is taken back
            await self._app.sdk.capabilities._withdraw(calls=(call.call_id,))
        if isinstance(outcome, Pending):
            self._app._log.leave_tool_call_pending(call.call_id)
            if outcome is TO_SURFACE:
                fields = ("call_id", "method", "arguments", "instance_id")
                await self._app.sdk.surface._hand_call({k: getattr(call, k) for k in fields})
        elif outcome is not None:
            await self._finish(call.call_id, outcome)

    async def _outcome(self, call: ToolCall, handler: BoundHandler) -> dict[str, Any] | Pending:
        failed = f"the handler of {call.method} failed"
        arguments = dict(call.arguments)
        try:
            value = await (handler(arguments, call) if _takes_call(handler) else handler(arguments))
        except ContractError as exc:
            if exc.code in APP_TOOL_ERROR_CODES:
                return _error(call.call_id, exc.code, exc.detail)
            log.warning("tool call %s (%s) refused with %s", call.call_id, call.method, exc.code)
            return _error(call.call_id, Code.HANDLER_FAILED, failed)
        except Exception:
            log.exception("tool call %s (%s) failed", call.call_id, call.method)
            return _error(call.call_id, Code.HANDLER_FAILED, failed)
        if isinstance(value, Deadline):  # the runtime's call from here: the app's last word
            return value.report(call.call_id)
        if value is None and call.method in self._for_surface:
            if call.instance_id is None:  # a foreground tool's call names its instance
                return _error(call.call_id, Code.FOREGROUND_REQUIRED, "no instance shows it")
            return TO_SURFACE
        return PENDING if value is PENDING else _result(call.call_id, value)

    # -- calls handed to the surface (`sdk.surface` relays the web host's requests) -------

    def _surface_calls(self, instance_id: str) -> list[dict[str, Any]]:
        """The open calls handed to the surfaces of `instance_id`, oldest first."""
        return [
            _handed(row["body"])
            for row in self._app._log.tool_calls("WHERE state = 'pending'")
            if row["method"] in self._for_surface and row["body"].get("instance_id") == instance_id
        ]

    async def _surface_answer(self, instance_id: str, op: str, body: dict[str, Any]) -> None:
        """A surface's word on a call: taken only for an open call handed to the surfaces
        of its instance (`ownership_mismatch` otherwise: made up, another instance's, or
        ended already), then reported as a handler's would be."""
        call_id = str(body.get("call_id"))
        if call_id not in {c["call_id"] for c in self._surface_calls(instance_id)}:
            raise _not_open(call_id)
        if op == "tool.result":
            await self.complete(call_id, dict(body.get("output") or {}))
        elif op == "tool.error":
            await self.fail(call_id, str(body.get("code")), body.get("message"))
        else:
            fields = {k: body.get(k) for k in ("stage", "percent", "message")}
            await self.progress(call_id, **fields)

    async def _finish(self, call_id: str, report: dict[str, Any] | None) -> bool:
        """End an open call with its final report (None: with none); False if it was not
        open. What is sent is what was recorded: the report as its JSON reads back."""
        text = None if report is None else _sendable(call_id, report)
        index = self._app._log.finish_tool_call(call_id, text)
        if index is None:
            return False
        if text is not None:
            await self._send(call_id, index, json.loads(text))
        return True

    async def _send(self, call_id: str, index: int, report: dict[str, Any]) -> None:
        report_id = derive_id(call_id, index)
        await self._app.cast(TOOL_ROUTER, "tool_router.report", report, id=report_id)
