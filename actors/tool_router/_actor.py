"""The tool router actor: the one owner of tools.

What each message is for (its senders and body are its door's: docs/messages.md):
- `tool_router.inbound`: the agent's tool calls and cancels in stream order, and
  conversations newly associated with an agent, as the router hands them over;
- `tool_router.apps`: the registry and the live instances changed;
- `tool_router.report`: progress, result or error of one of an app's calls, or a deadline
  that hands the call to the runtime (`_operations`);
- `tool_router.deadline`: an app's deadline operations in the conversation of one of its
  running calls, listed or interrupted; or one of its own open deadline operations
  finished with its output, paused, resumed or stopped for the user (`_operations`);
- `tool_router.interrupt`: the user stops a call;
- `tool_router.policy.get` / `.replace`: the user sees the tool policy with each tool's
  visibility, and replaces it (`_policy_edit`).

The tool router keeps its own state in `tool_router.db` (`_db`). Each handled message is a
step (`_steps`): its writes (the call's row, its deadline operation, an inventory) and the
record that it was applied are one transaction; what it emits goes out after the commit:
the envelopes for the agent in one `transport.submit` (the transport holds it until the
AppServer's verdict), then the app's and the chat's messages and any audit row (a cast to
the store, never waited for). No step waits for the store. What the router keeps in memory
(the open calls, the apps, the inventories) is rebuilt from its database at start; a call
left open by a crash resumes where its row says.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, Final, TypeVar

import trio

from actors.app_manager.registry import read_apps, view_version
from actors.kernel import Actor, Message, derive_id, handles, new_id
from contracts import (
    APP_TOOL_ERROR_CODES,
    DEFAULT_TOOL_TIMEOUT_MS,
    RUNTIME_GLOBAL_CONVERSATION,
    SCOPE_CHAT,
    Code,
    ContractError,
    InventoryTool,
    check_tool_arguments,
    check_tool_output,
    utc_timestamp,
    validate_envelope,
)

from ._activation import Activations
from ._apps import app_views
from ._artifacts import ArtifactRefused, shown_artifact, with_artifact_reference
from ._calls import (
    SLOT_ACCEPTED,
    SLOT_DISPATCH,
    SLOT_FINAL,
    SLOT_SHOWN,
    Call,
    envelope,
    final_envelope,
    now_ms,
    outbox_item,
    shown,
)
from ._db import call_row, load_tools, open_db
from ._deadlines import RUNNING, Deadline, shown_deadline
from ._inventory import AppView, Computed, compute, find_tool
from ._migration import move_from_runtime_db
from ._operations import DeadlineOperations
from ._policy import CAPABILITIES_SECTION, POLICY_FILE, Policy, load_policy, policy_stamp
from ._policy_edit import checked_policy, inventories_view, policy_view, write_policy
from ._policy_watch import changes_of
from ._steps import Steps
from .door import (
    DOOR,
    AppsView,
    CallView,
    DeadlineRequest,
    Inbound,
    Interrupt,
    NoFields,
    PolicyReplace,
    Report,
)

log = logging.getLogger("lineup.tool_router")

# While a call is open the deadline watch looks at least this often, whatever it expects.
OPEN_CALL_LOOK_S: Final = 1.0
LATE_LOOK_MS: Final = 100  # a call due that did not end when looked at is looked at again
FOREIGN_AUDIT_S: Final = 10.0
LATE_REPORT: Final = "tool_report.late"  # the audit code of a report on a call ended
# The calls ended last, kept to tell a late report on one from a report on no call.
ENDED_KEPT: Final = 1024

H = TypeVar("H", bound=Callable[..., Awaitable[Any]])


def stepped(handler: H) -> H:
    """A handler that runs once the router has loaded, as one step (`_steps`): applied
    once, its writes in one transaction, what it emits sent after the commit."""

    @functools.wraps(handler)
    async def run(self: ToolRouterActor, msg: Message) -> Any:
        if not self.loaded.is_set():  # not waited for once set: a wait is a checkpoint
            await self.loaded.wait()
        return await self.steps.handle(msg, lambda: handler(self, msg))

    return run  # type: ignore[return-value]


class ToolRouterActor(Actor):
    door = DOOR

    async def on_start(self) -> None:
        self.data_dir = Path(str(self.config.get("data_dir", ".")))
        self.core = {str(m["app_scope"]): m for m in self.config.get("core_apps", [])}
        # What the capability gateway serves on this host (the supervisor names them).
        self.host_capabilities = frozenset(self.config.get("host_capabilities", []))
        self.call_timeout = float(self.config.get("call_timeout", 2.0))
        self.apps: dict[str, AppView] = {}
        self.foreground: str | None = None
        self.apps_version = (0, 0)  # of the app manager's view held (`view_version`)
        self.conversations: dict[str, str] = {}
        self.inventories: dict[str, dict[str, Any]] = {}
        self.revision = 0
        self.calls: dict[str, Call] = {}
        self.ended: dict[str, Call] = {}  # the last ENDED_KEPT calls ended, oldest first
        self.policy = Policy()
        self.stamp = policy_stamp(self.data_dir)
        self.counts = {
            "accepted": 0,
            "refused": 0,
            "succeeded": 0,
            "failed": 0,
            "foreign_reports": 0,
            "owned_reports": 0,
            "late_reports": 0,
        }
        # (sender, why) → (refused since, audited at)
        self.refused_reports: dict[tuple[str, str], tuple[int, float]] = {}
        self.activations = Activations(self)
        self.operations = DeadlineOperations(self)
        self.db = open_db(self.data_dir, synchronous=self.synchronous)
        move_from_runtime_db(self.db, self.data_dir)
        self.steps = Steps(
            self.db,
            self.data_dir,
            synchronous=self.synchronous,
            send=self._send,
            abandoned=self._restore,
            stepped=self._deadline_moved,
            waiting=lambda: self.backlog,
        )
        # The deadline watch's next look (epoch ms) and what wakes it before that.
        self.next_look_ms = math.inf
        self.look_sooner = trio.Event()
        self.loaded = trio.Event()
        self.nursery.start_soon(self._load)

    def statistics_extra(self) -> dict[str, Any]:
        deadlines = sum(1 for c in self.calls.values() if c.operation is not None)
        return {
            "revision": self.revision,
            "open_calls": len(self.calls),
            "open_deadlines": deadlines,
            **self.counts,
            **self.steps.counts,
        }

    async def store(self, type_: str, body: Any, id: str | None = None) -> Any:
        return await self.call_until_answered(
            "store", type_, body, id=id or new_id(), max_timeout=self.call_timeout
        )

    def write(self, body: dict[str, Any]) -> None:
        """Rows of the running step, in its transaction (`Steps.write`)."""
        self.steps.write(body)

    async def cast(self, to: str, type: str, body: Any = None, *, id: str | None = None) -> str:
        """Inside a step, held until the step is committed (`_steps`); else sent at once."""
        message_id = id or self._next_id()
        if not self.steps.hold(to, type, body, message_id):
            await self._send(to, type, body, message_id)
        return message_id

    async def before_acks(self) -> None:
        await self.steps.flush_unsynced()

    async def _send(self, to: str, type_: str, body: Any, message_id: str) -> None:
        await Actor.cast(self, to, type_, body, id=message_id)

    async def _load(self) -> None:
        registry = await trio.to_thread.run_sync(read_apps, self.data_dir)
        conversations = await self.store("store.conversations", {})
        self.conversations = dict(conversations["conversations"])
        self.apps, self.foreground = app_views(registry, self.core)
        self.apps_version = view_version(registry["settings"].get("view_version"))
        self.policy = load_policy(self.data_dir)
        operations = self._read_state()
        # What a step of its own emitted just before the router stopped may not have left.
        await self.steps.resend_own()
        async with self.steps.own():
            await self.publish(self.conversations)
        self.loaded.set()
        await self.operations.retell(operations)
        async with self.steps.own():
            for call in sorted(self.calls.values(), key=lambda c: c.created_ms):
                await self._resume(call)
        self.nursery.start_soon(self._watch_policy)
        self.nursery.start_soon(self._watch_deadlines)

    def _read_state(self) -> list[Deadline]:
        """The revision, the inventories and the open calls with their operations, as the
        file has them; the operations to tell their apps again."""
        state = load_tools(self.db, now_ms())
        self.revision = int(state["revision"])
        self.inventories = {row["conversation_id"]: row for row in state["inventories"]}
        operations = {row["call_id"]: Deadline.from_row(row) for row in state["deadlines"]}
        self.calls = {}
        for row in state["calls"]:
            call = Call.from_row(row)
            call.tool = (
                find_tool(self._published(call.conversation_id), call.app_scope, call.method) or {}
            )
            call.operation = operations.get(call.call_id)
            self.calls[call.call_id] = call
        return list(operations.values())

    def _restore(self) -> None:
        """A step that could not be committed (the disk full, say) may have changed what is
        in memory: it is read again from the file, so that the message, given again, decides
        anew from what is on disk. The calls waiting for an activation wait as they are."""
        self._read_state()
        for key, waiting in self.activations.waiting.items():
            self.activations.waiting[key] = [
                self.calls[c.call_id] for c in waiting if c.call_id in self.calls
            ]

    # -- the inventory ---------------------------------------------------------------------

    def _published(self, conversation_id: str) -> dict[str, Any]:
        row = self.inventories.get(conversation_id)
        return dict(row["payload"]) if row else {}

    def compute(self, conversation_id: str) -> Computed:
        agent = self.conversations.get(conversation_id, "")
        return compute(self.apps, agent, conversation_id, self.policy, self.host_capabilities)

    async def publish(self, conversations: Iterable[str]) -> None:
        """A new revision for each conversation whose visible tools changed, and only then.

        The `runtime:global` inventory, what any agent may use in a conversation the
        runtime has not heard of yet, is published with every change too: an agent holds it
        before the first message of a new conversation, so it acts on what it was last
        told from that first message on. A new conversation whose tools are the global ones
        takes the global revision, so a call made from it is current."""
        rows, outbox = [], []
        for conversation in [RUNTIME_GLOBAL_CONVERSATION, *sorted(set(conversations))]:
            computed = self.compute(conversation)
            current = self.inventories.get(conversation)
            visibility = [v.to_row() for v in computed.visibility]
            if current is not None and current["hash"] == computed.hash:
                if current.get("visibility") != visibility:  # why, not what: no new revision
                    current["visibility"] = visibility
                    rows.append(current)
                continue
            known = self.inventories.get(RUNTIME_GLOBAL_CONVERSATION)
            if current is None and known is not None and known["hash"] == computed.hash:
                revision = int(known["revision"])  # what the agent holds for it already
            else:
                self.revision += 1
                revision = self.revision
            payload = computed.payload(revision)
            row = {
                "conversation_id": conversation,
                "agent_id": self.conversations.get(conversation, ""),
                "revision": revision,
                "hash": computed.hash,
                "payload": payload,
                "visibility": visibility,
                "published_ms": now_ms(),
            }
            rows.append(row)
            self.inventories[conversation] = row
            outbox.append(outbox_item(_inventory_envelope(conversation, payload, new_id())))
        if rows:
            self.write({"inventories": rows, "revision": self.revision, "outbox": outbox})
            for row in rows:
                log.info("inventory %s: revision %s", row["conversation_id"], row["revision"])

    async def _watch_policy(self) -> None:
        async for _ in changes_of(self.data_dir, POLICY_FILE):
            stamp = policy_stamp(self.data_dir)
            if stamp != self.stamp:
                self.stamp = stamp
                self.policy = load_policy(self.data_dir)
                log.info("tool policy changed: %s", self.policy.broken or "loaded")
                async with self.steps.own():
                    await self.publish(self.conversations)

    # -- from the router: calls, cancels, conversations ---------------------------------------

    @handles("tool_router.inbound")
    @stepped
    async def inbound(self, msg: Message[Inbound]) -> None:
        fresh = {
            c: a for c, a in msg.body.get("associate", {}).items() if c not in self.conversations
        }
        self.conversations.update(fresh)
        if fresh:
            await self.publish(fresh)
        views = msg.body.get("calls", [])
        await self._invoke([v for v in views if v["type"] == "lineup.tool.invoke"])
        for view in views:
            if view["type"] == "lineup.tool.cancel":
                await self._cancel(view)

    async def _invoke(self, views: list[CallView]) -> None:
        """Take a run of calls, each checked and stored with its receipt (or its refusal) in
        the step's one transaction; a call id known already is answered from its record."""
        for view in views:
            call = _call_of(view)
            known = self.calls.get(call.call_id)
            if known is None:
                row = call_row(self.db, call.call_id)
                known = Call.from_row(row) if row is not None else None
            if known is not None:
                if known.envelope_id != call.envelope_id:
                    await self._again(known, call)  # the agent asked again
                continue
            refusal = self._refusal(call)
            if refusal is not None:
                call.state, call.code, call.detail = "failed", str(refusal.code), refusal.detail
                call.note("refused", code=call.code)
                self.write(
                    {
                        "calls": [call.to_row()],
                        "outbox": [outbox_item(final_envelope(call, id=call.slot_id(SLOT_FINAL)))],
                        "audit": [
                            _audit(call.code, f"{call.call_id}: {call.detail}", call.envelope_id)
                        ],
                    }
                )
                self.counts["refused"] += 1
                log.info("call %s refused: %s", call.call_id, refusal)
                continue
            call.note("accepted", revision=call.revision)
            call.arm()
            if self.activations.ready(call):  # it runs at once: stored as running
                call.state = "running"
                call.note("running", instance_id=call.instance_id)
            accepted = envelope(call, "lineup.tool.accepted", {}, id=call.slot_id(SLOT_ACCEPTED))
            self.write({"calls": [call.to_row()], "outbox": [outbox_item(accepted)]})
            self.counts["accepted"] += 1
            self.calls[call.call_id] = call
            await self.show(call, "accepted")
            await self._resume(call)

    def _refusal(self, call: Call) -> ContractError | None:
        """Why the call cannot be taken, in the contract's order: the revision, the tool's
        visibility, its arguments. Fills in the call's tool when it can be taken."""
        published = self.inventories.get(call.conversation_id)
        current = int(published["revision"]) if published else 0
        if call.revision != current:
            return ContractError(
                Code.STALE_INVENTORY_REVISION,
                f"revision {call.revision} is not the current {current or 'none'}: refresh",
            )
        tool = find_tool(published["payload"] if published else {}, call.app_scope, call.method)
        app = self.apps.get(call.app_scope)
        if app is None or not app.installed:
            return ContractError(Code.APP_NOT_INSTALLED, f"no app {call.app_scope!r} is installed")
        if not app.enabled:
            return ContractError(Code.APP_DISABLED, f"app {call.app_scope!r} is disabled")
        if tool is None:
            return ContractError(
                Code.TOOL_NOT_VISIBLE,
                f"{call.app_scope}/{call.method} is not in revision {current}",
            )
        if tool["contract_version"] != call.contract_version:
            return ContractError(
                Code.APP_VERSION_MISMATCH,
                f"{call.method} is contract version {tool['contract_version']},"
                f" not {call.contract_version}",
            )
        try:
            check_tool_arguments(InventoryTool.model_validate(tool), call.arguments)
        except ContractError as exc:
            return exc
        call.tool = tool
        return None

    async def _again(self, known: Call, retry: Call) -> None:
        """The same call id again, in another envelope: the recorded outcome once more (or
        its receipt while it is still open), never a second execution."""
        if known.done:
            env = final_envelope(
                known, id=derive_id(retry.envelope_id, SLOT_FINAL), reply_to=retry.envelope_id
            )
        else:
            env = envelope(
                known,
                "lineup.tool.accepted",
                {},
                id=derive_id(retry.envelope_id, SLOT_ACCEPTED),
                reply_to=retry.envelope_id,
            )
        self.write({"outbox": [outbox_item(env)]})

    async def _cancel(self, view: CallView) -> None:
        call = self.calls.get(str(view.get("call_id")))
        if call is None:
            row = call_row(self.db, str(view.get("call_id")))
            if row is None or row["agent_id"] != view["agent_id"]:
                log.info("cancel of unknown call %s dropped", view.get("call_id"))
                return
            retry = Call.from_row(row)
            retry.envelope_id = str(view["envelope_id"])
            await self._again(Call.from_row(row), retry)
            return
        if call.agent_id != view["agent_id"]:
            self.write(
                {
                    "audit": [
                        {
                            "code": "ownership_mismatch",
                            "detail": f"cancel of {call.call_id} by {view['agent_id']}",
                            "message_id": view["envelope_id"],
                        }
                    ]
                },
            )
            return
        if await self.operations.interrupt(call, "the agent"):
            # It had ended at its deadline: the cancel gets that outcome, as a cancel of any
            # finished call does.
            retry = call.copy()
            retry.envelope_id = str(view["envelope_id"])
            await self._again(call, retry)

    # -- running a call ----------------------------------------------------------------------

    async def _resume(self, call: Call) -> None:
        """Take an open call on from its recorded state."""
        if call.done:
            return
        if not call.tool:
            await self.finish(
                call, error=ContractError(Code.TOOL_NOT_VISIBLE, "the tool is no longer published")
            )
            return
        if call.state == "running":
            await self.dispatch(call)
        elif call.operation is not None:
            await self.operations.resume(call)
        else:
            await self.activations.request(call)

    async def show(self, call: Call, state: str, id: str | None = None, **facts: Any) -> None:
        """Tell the interaction app how the call goes (its timeline shows each call, by the
        tool's title and the app's, the words a person reads)."""
        app = self.apps.get(call.app_scope)
        facts.setdefault("title", call.tool.get("title"))
        facts.setdefault("app_title", app.manifest.get("title") if app is not None else None)
        await self.cast(
            f"app.{SCOPE_CHAT}",
            "app.tool.event",
            shown(call, state, **facts),
            id=id or call.slot_id(SLOT_SHOWN[state]),
        )

    async def dispatch(self, call: Call) -> None:
        """Hand the call to its app (again after a crash: the SDK runs a call id once)."""
        if call.state != "running":
            call.state = "running"
            call.note("running", instance_id=call.instance_id)
            call.arm()
            self.write({"calls": [call.to_row()]})
            await self.show(call, "running")
        await self.cast(
            f"app.{call.app_scope}",
            "app.tool.invoke",
            {
                "call_id": call.call_id,
                "method": call.method,
                "arguments": call.arguments,
                "app_scope": call.app_scope,
                "conversation_id": call.conversation_id,
                "instance_id": call.instance_id,
            },
            id=call.slot_id(SLOT_DISPATCH),
        )

    async def finish(
        self,
        call: Call,
        *,
        output: dict[str, Any] | None = None,
        error: ContractError | None = None,
        from_app: bool = False,
        audit_detail: str | None = None,
    ) -> None:
        """The call's one final outcome: recorded with its envelope in one transaction."""
        if call.done:
            return
        env: dict[str, Any] | None = None
        if error is None:
            try:
                env = envelope(
                    call,
                    "lineup.tool.result",
                    {"output": output or {}},
                    id=call.slot_id(SLOT_FINAL),
                    from_app=from_app,
                )
            except ContractError as exc:
                # An output the agent's envelope cannot carry (it sits two levels deeper
                # there than in the app's report, beside the envelope's own fields): the
                # app's failure, as an output its schema refuses.
                error = ContractError(Code.HANDLER_FAILED, "the app's output cannot be relayed")
                audit_detail, from_app = f"its output: {exc.detail}", False
        if error is None:
            call.state, call.output = "succeeded", output or {}
        else:
            call.state, call.code, call.detail = "failed", str(error.code), error.detail
        call.note(call.state, code=call.code, from_app=from_app)
        call.deadline_ms = None
        operation = call.operation
        if operation is not None and operation.open:  # ended by the runtime's own verdict
            operation.interrupt(now_ms(), f"the runtime ({call.code})")
        if env is None:
            env = final_envelope(call, id=call.slot_id(SLOT_FINAL))
        audit = []
        if error is not None and error.code in (Code.HANDLER_FAILED, Code.OPERATION_EXPIRED):
            detail = f"{call.call_id}: {audit_detail or error.detail}"
            audit = [_audit(str(error.code), detail, call.envelope_id)]
        self.calls.pop(call.call_id, None)
        # Kept light (what a late report's audit names), whatever the call carried.
        self.ended[call.call_id] = dataclasses.replace(
            call, arguments={}, output=None, history=[], tool={}, operation=None
        )
        if len(self.ended) > ENDED_KEPT:
            del self.ended[next(iter(self.ended))]
        self.counts[call.state] += 1
        rows: dict[str, Any] = {
            "calls": [call.to_row()],
            "outbox": [outbox_item(env)],
            "audit": audit,
        }
        if operation is not None:
            rows["deadlines"] = [operation.to_row()]
        # The previous foreground is asked back before the final is written: the agent's
        # next call, which it may make once it has the final, is then behind it at the app
        # manager, and a foreground it takes is not taken away by this call's end.
        await self.activations.ended(call)
        self.write(rows)
        log.info("call %s %s %s", call.call_id, call.state, call.code or "")
        if operation is not None:
            await self.operations.ended(call)
        if any(h["event"] == "accepted" for h in call.history):  # refused calls never showed
            # An operation that ran says when it ended, in place of when it was to end.
            ended = None
            if operation is not None and operation.started_ms is not None:
                ended = shown_deadline(operation, now_ms())
            await self.show(
                call, call.state, code=call.code, artifact=shown_artifact(call), deadline=ended
            )

    async def _watch_deadlines(self) -> None:
        """End each call whose timeout or deadline operation has come, scheduled by the
        nearest due time; a step that brings a due time nearer wakes it (one that starts a
        call, or pauses and resumes an operation), and with no call open it sleeps until
        one comes."""
        while True:
            now = now_ms()
            next_due = self._next_due()
            if next_due is not None and next_due <= now:
                async with self.steps.own():  # whatever comes due now ends in one step
                    await self.operations.reached(now)
                    due = [c for c in self.calls.values() if c.deadline_ms and c.deadline_ms <= now]
                    for call in due:
                        await self._expire(call)
                now, next_due = now_ms(), self._next_due()
                if next_due is not None and next_due <= now:  # not ended yet: again shortly
                    next_due = now + LATE_LOOK_MS
            self.look_sooner = trio.Event()
            wait = math.inf if not self.calls else OPEN_CALL_LOOK_S
            if next_due is not None:
                wait = min(wait, (next_due - now) / 1000)
            self.next_look_ms = now + wait * 1000
            with trio.move_on_after(wait):
                await self.look_sooner.wait()

    def _deadline_moved(self) -> None:
        """After each step: wake the deadline watch if a due time is now nearer than its
        next look (a report that only pushes a timeout later wakes nothing)."""
        next_due = self._next_due()
        if next_due is not None and next_due < self.next_look_ms:
            self.look_sooner.set()

    def _next_due(self) -> int | None:
        """The nearest moment (epoch ms) a call's timeout or running operation ends."""
        moments = [c.deadline_ms for c in self.calls.values() if c.deadline_ms]
        moments += [
            c.operation.ends_ms
            for c in self.calls.values()
            if c.operation is not None and c.operation.state == RUNNING and c.operation.ends_ms
        ]
        return min(moments) if moments else None

    async def _expire(self, call: Call) -> None:
        """The call's time is up (its tool's `timeout_ms`, `DEFAULT_TOOL_TIMEOUT_MS` unless it
        declares one): `operation_expired`, and its app is told to stop what it still runs
        for it. Whatever its handler says later is a late report, ignored."""
        timeout = call.tool.get("timeout_ms", DEFAULT_TOOL_TIMEOUT_MS)
        await self.finish(
            call, error=ContractError(Code.OPERATION_EXPIRED, f"no outcome within {timeout} ms")
        )
        await self.tell_app_ended(call)

    async def tell_app_ended(self, call: Call) -> None:
        """The runtime ended the call: its app stops its handler and takes back what that
        asked (`app.tool.cancel`)."""
        await self.cast(
            f"app.{call.app_scope}",
            "app.tool.cancel",
            {"call_id": call.call_id},
            id=derive_id(call.envelope_id, SLOT_DISPATCH + 1),
        )

    # -- from the app manager and the apps ------------------------------------------------------

    @handles("tool_router.apps")
    @stepped
    async def apps_changed(self, msg: Message[AppsView]) -> None:
        # The operator's view (`lineup debug send`) is applied as it is, its version
        # neither checked nor kept: only the app manager's views order each other.
        if msg.sender == "app_manager":
            version = view_version(msg.body.get("version"))
            if version < self.apps_version:
                # An older view, given again after a restart read a newer one from the
                # file: applied, it would publish a state that has passed.
                log.info("a view of the apps older than the one held, ignored: %s", version)
                return
            self.apps_version = version
        before = self.apps
        self.apps, self.foreground = app_views(msg.body, self.core)
        for call in list(self.calls.values()):
            ending = _ended_by_change(
                before.get(call.app_scope), self.apps.get(call.app_scope), call
            )
            if ending is not None:
                await self.finish(call, error=ending)
        await self.operations.foreground_changed()
        await self.publish(self.conversations)

    @handles("tool_router.report")
    @stepped
    async def report(self, msg: Message[Report]) -> None:
        body = msg.body
        call = self.calls.get(str(body["call_id"]))
        if call is None:
            # Finished already (a late or repeated report): the first final stands. A late
            # one from the call's own app is counted and audited; one on a call never made
            # (or another app's) is answered the same, and nothing says the call exists.
            ended = self.ended.get(str(body["call_id"]))
            if ended is not None and msg.sender == f"app.{ended.app_scope}":
                await self.refuse_report(msg, ended, "late")
            return
        if msg.sender != f"app.{call.app_scope}":
            await self.refuse_report(msg, call, "foreign")
            return
        kind = body["kind"]
        if kind == "deadline":
            await self.operations.take(call, msg)
            return
        if call.operation is not None:  # the runtime's call now: its app cannot end it
            await self.operations.refuse(msg, call)
        if kind == "result" and self.operations.result_is_runtimes(call):
            await self.operations.answered(call)
            return
        if kind == "progress":
            # What is derived from the report takes the call's id too: message ids are
            # unique per sender only, and an app's report ids (derive_id(call_id, n)) are
            # computable by any app, which could send one first and have its envelope kept
            # in place of this one.
            await self._progress(call, body, f"{call.envelope_id}:{msg.id}")
        elif kind == "result":
            try:
                check_tool_output(InventoryTool.model_validate(call.tool), body.get("output"))
            except ContractError as exc:
                # The agent learns that the output broke the schema, never what it held; the
                # audit keeps the whole reason.
                refusal = ContractError(exc.code, "the app's output does not fit its schema")
                await self.finish(call, error=refusal, audit_detail=exc.detail)
                return
            try:
                output = await with_artifact_reference(self, call, dict(body.get("output") or {}))
            except ArtifactRefused as refused:
                await self.finish(call, error=refused, audit_detail=refused.audit)
                return
            await self.finish(call, output=output, from_app=True)
        else:
            code = str(body.get("code"))
            if code not in APP_TOOL_ERROR_CODES:
                error = ContractError(
                    Code.HANDLER_FAILED, f"the app reported a code it may not use: {code[:64]}"
                )
            else:
                error = ContractError(Code(code), str(body.get("message") or ""))
            await self.finish(call, error=error, from_app=code in APP_TOOL_ERROR_CODES)

    @handles("tool_router.deadline")
    @stepped
    async def deadline(self, msg: Message[DeadlineRequest]) -> dict[str, Any]:
        return await self.operations.request(msg)

    @handles("tool_router.interrupt")
    @stepped
    async def interrupt(self, msg: Message[Interrupt]) -> dict[str, Any] | None:
        return await self.operations.user_stop(msg)

    @handles("tool_router.policy.get")
    async def policy_get(self, msg: Message[NoFields]) -> dict[str, Any]:
        """The policy file and, per conversation, the revision published and every
        installed tool's visibility with its reason."""
        await self.loaded.wait()
        return {**policy_view(self.data_dir), **inventories_view(self.inventories.values())}

    @handles("tool_router.policy.replace")
    @stepped
    async def policy_replace(self, msg: Message[PolicyReplace]) -> dict[str, Any]:
        """The user's new policy: checked, written whole, in force at once (a revision for
        each conversation whose visible tools change), audited. A broken one changes nothing."""
        raw = msg.body["policy"]
        policy, data = checked_policy(raw)
        if CAPABILITIES_SECTION in raw:  # the capability gateway's rules: its parser decides
            answer = await self.call_until_answered(
                "capability_gateway",
                "capability_gateway.policy.check",
                {"section": raw[CAPABILITIES_SECTION]},
                id=new_id(),
                max_timeout=self.call_timeout,
            )
            if answer["problem"] is not None:
                raise ContractError(
                    Code.INVALID_PAYLOAD, f"the policy cannot be used: {answer['problem']}"
                )
        self.policy = policy
        write_policy(self.data_dir, data)
        self.stamp = policy_stamp(self.data_dir)
        log.info("tool policy replaced by %s", msg.sender)
        await self.cast(
            "store",
            "store.audit",
            {"code": "tool_policy.replace", "detail": f"by {msg.sender}", "message_id": msg.id},
        )
        before = {c: row["revision"] for c, row in self.inventories.items()}
        await self.publish(self.conversations)
        # The conversations whose agent is given a new revision now, and that revision.
        revisions = {
            c: row["revision"]
            for c, row in sorted(self.inventories.items())
            if before.get(c) != row["revision"]
        }
        return {"revisions": revisions}

    async def refuse_report(self, msg: Message, call: Call | None, why: str) -> None:
        """A report on another app's call (`foreign`), on one of its own calls that the
        runtime owns (`owned`), or on one of its own that has ended (`late`: its time ran
        out, or it was cancelled): dropped, counted, and audited at most once per sender and
        reason every `FOREIGN_AUDIT_S` (without waiting for the store), so an app that sends
        thousands costs every other app's calls nothing."""
        self.counts[f"{why}_reports"] += 1
        if call is None:
            return  # no call of that id: nothing to audit, as for any report on none
        key = (msg.sender, why)
        count, last = self.refused_reports.get(key, (0, 0.0))
        count += 1
        now = trio.current_time()
        if last and now - last < FOREIGN_AUDIT_S:
            self.refused_reports[key] = (count, last)
            return
        self.refused_reports[key] = (0, now)
        code = str(Code.OWNERSHIP_MISMATCH)
        if why == "foreign":
            what = f"{call.call_id} of {call.app_scope}"
        elif why == "owned":
            what = f"{call.call_id}, which the runtime owns until its deadline"
        else:
            code = LATE_REPORT
            what = f"{call.call_id}, which had ended {call.code or call.state}"
        detail = f"{msg.sender} reported on {what} ({count} refused)"
        log.warning("refused report: %s", detail)
        audit = {"code": code, "detail": detail, "message_id": msg.id}
        await self.cast("store", "store.audit", audit, id=new_id())

    async def _progress(self, call: Call, body: Report, report_id: str) -> None:
        payload = {k: body[k] for k in ("stage", "percent", "message") if body.get(k) is not None}
        call.note("progress", **payload)
        call.arm()
        env = envelope(
            call, "lineup.tool.progress", payload, id=derive_id(report_id, 0), from_app=True
        )
        self.write({"calls": [call.to_row()], "outbox": [outbox_item(env)]})
        await self.show(call, "progress", id=derive_id(report_id, 1), **payload)


def _call_of(view: CallView) -> Call:
    payload = view["payload"]
    return Call(
        call_id=str(view["call_id"]),
        envelope_id=str(view["envelope_id"]),
        conversation_id=str(view["conversation_id"]),
        agent_id=str(view["agent_id"]),
        app_scope=str(view["app_scope"]),
        method=str(payload.get("method")),
        contract_version=str(payload.get("contract_version")),
        arguments=dict(payload.get("arguments") or {}),
        revision=int(view.get("revision") or 0),
    )


def _audit(code: str, detail: str, message_id: str) -> dict[str, Any]:
    return {"code": code, "detail": detail, "message_id": message_id}


def _inventory_envelope(conversation: str, payload: dict[str, Any], id: str) -> dict[str, Any]:
    return validate_envelope(
        {
            "v": 1,
            "id": id,
            "type": "lineup.inventory",
            "timestamp": utc_timestamp(),
            "sender": {"kind": "runtime", "id": "runtime:tool_router"},
            "target": {"kind": "runtime", "app_scope": "runtime"},
            "scope": {"app_scope": "runtime", "conversation_id": conversation},
            "correlation": {"inventory_revision": payload["revision"]},
            "payload": payload,
        }
    ).to_dict()


def _ended_by_change(
    before: AppView | None, after: AppView | None, call: Call
) -> ContractError | None:
    """What ends an open call when its app changes under it: removed, disabled, another
    version, or its process gone while the call ran."""
    if after is None or not after.installed:
        return ContractError(
            Code.APP_NOT_INSTALLED, f"{call.app_scope} was removed during the call"
        )
    if not after.enabled:
        return ContractError(Code.APP_DISABLED, f"{call.app_scope} was disabled during the call")
    if before is not None and before.version != after.version:
        return ContractError(
            Code.APP_VERSION_MISMATCH,
            f"{call.app_scope} changed from {before.version} to {after.version} during the call",
        )
    if call.state == "running" and not after.instances:
        return ContractError(Code.HANDLER_FAILED, f"{call.app_scope} stopped during the call")
    return None
