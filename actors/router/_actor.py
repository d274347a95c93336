"""The router actor: every inbound envelope through the filter chain, every outbound action.

Effects are made replay-safe by deterministic ids: everything a handler sends gets
`derive_id(handled message id, n)` in a fixed order (a run's duplicates' answers a slot of
their own), what it delivers is decided by the run itself, and what it answers by the
store's answer (recorded with the persist transaction), not by what the router happens to
remember. A replayed handler therefore sends the same messages with the same ids, and the
mailbox keeps the first of each.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import trio
from pydantic import JsonValue

from actors.app_manager.registry import read_apps
from actors.kernel import (
    ACK_LATER,
    Actor,
    CallFailed,
    DerivedIds,
    Message,
    derive_id,
    handles,
    new_id,
)
from contracts import Code, ContractError

from ._delivery import app_actor, project, rejection_envelope, tool_call_view, user_envelope
from ._filter_chain import Accepted, FilterContext, Rejected, check_inbound
from .door import DOOR, Apps, Inbound

log = logging.getLogger("lineup.router")

_CHUNK_BYTES: Final = 512 * 1024  # app deliveries stay well under the kernel's 1 MiB frame
# The derived id of a run's duplicates' answers, taken once the store has answered: a slot
# of its own, since the run's deliveries take theirs in turn meanwhile.
DUPLICATES_SLOT: Final = 0x7D


@dataclass(frozen=True, slots=True)
class _Run:
    """What answering a run takes once the store has answered it."""

    caller: str
    id: str
    seq: int
    accepted: list[Accepted]
    queued: bool  # the run put answers to rejected messages in the outbox


def _only_from(msg: Message, sender: str) -> None:
    """The AppServer stream and its verdicts come from the transport, nobody else."""
    if msg.sender != sender:
        raise ContractError(
            Code.SENDER_NOT_ALLOWED, f"{msg.type} is the {sender}'s, not {msg.sender}'s"
        )


def _outbox_item(answer: dict[str, Any]) -> dict[str, Any]:
    """A rejection envelope, as an outbox item of the router's own (no app to tell)."""
    return {
        "key": answer["id"],
        "envelope": json.dumps(answer, separators=(",", ":")),
        "origin": None,
        "conversation_id": answer["scope"]["conversation_id"],
    }


def _persist_item(a: Accepted) -> dict[str, Any]:
    """One accepted message as the store keeps it."""
    return {
        "seq": a.seq,
        "id": a.env.id,
        "conversation_id": a.env.scope.conversation_id,
        "app_scope": a.env.scope.app_scope,
        "type": a.env.type,
        "sender_kind": a.env.sender.kind,
        "sender_id": a.env.sender.id,
        "envelope": a.text,
    }


def _chunks(accepted: list[Accepted]) -> Iterator[list[dict[str, Any]]]:
    """Consecutive runs of the messages' app projections, each well under the kernel's
    1 MiB frame: a projection is never larger than its envelope text, so the text's length
    (plus room for the keys) bounds its packed size."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for a in accepted:
        cost = len(a.text) + 512
        if chunk and size + cost > _CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(project(a.env, a.seq))
        size += cost
    if chunk:
        yield chunk


def _answers(rejected: list[Rejected]) -> Iterator[dict[str, Any]]:
    """The answers to the agent's rejected messages (a message that is not the agent's, or
    names no conversation, gets none)."""
    for rejection in rejected:
        if rejection.env is not None and rejection.env.sender.kind == "agent":
            answer = rejection_envelope(rejection.env, rejection.code, rejection.detail)
            if answer is not None:
                yield answer


def _rejection_row(r: Rejected) -> dict[str, Any]:
    """A rejection as the store audits it."""
    return {
        "seq": r.seq,
        "message_id": r.env.id if r.env is not None else r.message_id,
        "code": str(r.code),
        "detail": r.detail,
    }


def _check_user_side(app: str) -> None:
    if app != "chat":  # only the Interaction App speaks for the user
        raise ContractError(Code.SENDER_NOT_ALLOWED, f"{app!r} cannot send as the user")


class RouterActor(Actor):
    """Filter chain, persisting through the store, delivery to app inboxes."""

    door = DOOR

    async def on_start(self) -> None:
        self.ctx = FilterContext.from_config(self.config.get("apps"))
        self.user_id = str(self.config.get("user_id", "user"))
        self.call_timeout = float(self.config.get("call_timeout", 2.0))
        self.floor = 0
        self.forwarded = 0  # messages delivered to an app's inbox
        self.rejected = 0
        # What the router needs from the store and the app manager's file is loaded in a task
        # of its own, and every handler waits for it before it filters anything.
        self.loaded = trio.Event()
        self.nursery.start_soon(self._load)

    async def _load(self) -> None:
        reply = await self._store("store.conversations", {}, new_id())
        self.ctx.conversations.update(reply["conversations"])
        data_dir = self.config.get("data_dir")
        if data_dir:  # the app manager's view, as last committed (later ones are cast)
            registry = await trio.to_thread.run_sync(read_apps, str(data_dir))
            self._set_apps(registry["settings"].get("routing"))
        self.floor = (await self._store("store.cursor.get", {}, new_id()))["cursor"]
        self.loaded.set()

    def statistics_extra(self) -> dict[str, Any]:
        return {"forwarded": self.forwarded, "rejected": self.rejected, "floor": self.floor}

    async def _store(self, type: str, body: Any, id: str) -> Any:
        return await self.call_until_answered(
            "store", type, body, id=id, max_timeout=self.call_timeout
        )

    def _set_apps(self, apps: Mapping[str, Mapping[str, Any]] | None) -> None:
        """The app manager's view of the apps (steps 4, 6, 7), over the configured ones."""
        if apps:
            configured = FilterContext.from_config(self.config.get("apps")).apps
            self.ctx.apps = {**configured, **FilterContext.from_config(apps).apps}

    @handles("router.apps")
    async def apps(self, msg: Message[Apps]) -> None:
        """The registry changed: which apps are installed, enabled, subscribed, running."""
        _only_from(msg, "app_manager")
        await self.loaded.wait()
        self._set_apps(msg.body.get("apps"))

    # -- inbound ---------------------------------------------------------------------------

    @handles("router.inbound")
    async def inbound(self, msg: Message[Inbound]) -> Any:
        """A run of the AppServer stream: `items` [[seq, message JSON text], ...], in order.

        Filtered, then persisted through the store in one commit; as soon as that request
        is sent (the mailbox holds it before what follows), the agent's tool calls and newly
        associated conversations go to the tool router (which knows its calls by id) and
        each app's messages to its inbox (whose log knows its messages by id). The store's
        answer is awaited beside the next runs (`_answer`): then a duplicate id's answer
        goes into the outbox, and the reply tells the transport how far the stream is
        durable (`cursor`) and whether the outbox has something new (`outbox`)."""
        _only_from(msg, "transport")
        await self.loaded.wait()
        ids = DerivedIds(msg.id)
        accepted: list[Accepted] = []
        rejected: list[Rejected] = []
        associate: dict[str, str] = {}
        cursor = 0
        for seq, text in msg.body["items"]:
            cursor = max(cursor, seq)
            verdict = check_inbound(seq, text, self.ctx)
            if isinstance(verdict, Accepted):
                accepted.append(verdict)
                if verdict.associates:
                    conversation = verdict.env.scope.conversation_id
                    associate[conversation] = verdict.associates
                    self.ctx.conversations[conversation] = verdict.associates
            elif seq > self.floor:  # below the floor it was audited when first seen
                rejected.append(verdict)
        outbox = [_outbox_item(answer) for answer in _answers(rejected)]
        request = {
            "items": [_persist_item(a) for a in accepted],
            "rejections": [_rejection_row(r) for r in rejected],
            "outbox": outbox,
            "associate": associate,
            "cursor": cursor,
        }
        self.rejected += len(rejected)
        # The store's answer is awaited beside the next runs (`_answer`): the transport is
        # answered, and this delivery acknowledged, once it is in.
        run = _Run(msg.sender, msg.id, msg.seq, accepted, bool(outbox))
        await self.nursery.start(self._answer, run, request, ids.next())
        calls = [tool_call_view(a.env, a.seq) for a in accepted if a.to_tool_router]
        if calls or associate:
            await self.cast(
                "tool_router",
                "tool_router.inbound",
                {"calls": calls, "associate": associate},
                id=ids.next(),
            )
        await self._deliver(accepted, ids)
        return ACK_LATER

    async def _answer(
        self,
        run: _Run,
        request: dict[str, Any],
        id: str,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """The store's commit of a run, started once the request is sent; then the
        duplicates' answers, the transport's answer and the delivery's ack. Until the ack
        the delivery stays in flight: a router that dies meanwhile is handed the run again
        and sends the same messages under the same ids."""
        try:
            stored = await self.call_until_answered(
                "store",
                "store.inbound.persist",
                request,
                id=id,
                max_timeout=self.call_timeout,
                task_status=task_status,
            )
            # Everything up to `cursor` is now in the store: a re-sent rejection below it
            # was in this request already.
            self.floor = max(self.floor, stored["cursor"])
            answered = await self._answer_duplicates(
                run.accepted, stored["duplicates"], derive_id(run.id, DUPLICATES_SLOT)
            )
        except (CallFailed, ContractError) as exc:  # the run is answered, and done
            error = (
                exc
                if isinstance(exc, ContractError)
                else ContractError(Code.STORE_UNAVAILABLE, f"the store: {exc}")
            )
            await self.reply(run.caller, run.id, error=error)
        else:
            body = {"cursor": stored["cursor"], "outbox": run.queued or answered}
            await self.reply(run.caller, run.id, body)
        self.ack(run.seq)

    async def _deliver(self, accepted: list[Accepted], ids: DerivedIds) -> None:
        """Each app's messages to its inbox, per app in stream order, once the run for the
        store is sent (the mailbox holds it first). The ids derive from the run's, so a
        replayed run sends the same messages and each inbox keeps them once; a message the
        stream brings again (a re-sent seq, an id the AppServer gave a second seq) is kept
        once by the app's log, whose key is the message's id."""
        by_app: dict[str, list[Accepted]] = {}
        for a in accepted:
            if a.deliver_to is not None:
                by_app.setdefault(a.deliver_to, []).append(a)
        for app in sorted(by_app):
            for chunk in _chunks(by_app[app]):
                await self.cast(app_actor(app), "app.deliver", {"messages": chunk}, id=ids.next())
                self.forwarded += len(chunk)

    async def _answer_duplicates(
        self, accepted: list[Accepted], duplicates: list[dict[str, Any]], id: str
    ) -> bool:
        """An agent's message whose id the store holds under another seq gets its
        `duplicate` answer in the outbox; True when there was one. A tool call or cancel is
        the tool router's to answer: it knows its calls by id and answers one asked again
        from its record."""
        by_id = {a.env.id: a for a in accepted}
        items = []
        for dup in duplicates:
            a = by_id.get(dup["id"])
            if a is None or a.env.sender.kind != "agent" or a.to_tool_router:
                continue
            answer = rejection_envelope(a.env, "duplicate", f"id already stored ({dup['seq']})")
            if answer is not None:
                items.append(_outbox_item(answer))
        if items:
            await self._store("store.outbox.enqueue", {"items": items}, id)
        return bool(items)

    # -- outbound: the user's actions, into the outbox (docs/protocol.md §4.5) ---------------

    @handles("router.action")
    async def action(self, msg: Message[dict[str, JsonValue]]) -> None:
        """A declarative action from an app: `action` (send_text | answer), `id` (the envelope
        id the app minted for its local echo), `conversation_id`, `text` / `response`."""
        ids = DerivedIds(msg.id)
        app = msg.sender.removeprefix("app.")
        body = dict(msg.body or {})
        try:
            _check_user_side(app)
            envelope = user_envelope(body, user_id=self.user_id)
        except ContractError as exc:
            await self.cast(
                msg.sender,
                "app.action.state",
                {
                    # The app's own id for its action, when it gave one it can know again.
                    "id": body["id"] if isinstance(body.get("id"), str) else None,
                    "state": "rejected",
                    "code": str(exc.code),
                    "detail": exc.detail,
                },
                id=ids.next(),
            )
            return
        item = {
            "key": envelope["id"],
            "envelope": json.dumps(envelope, separators=(",", ":")),
            "origin": app,
            "conversation_id": envelope["scope"]["conversation_id"],
        }
        await self._store("store.outbox.enqueue", {"items": [item]}, ids.next())
        await self.cast("transport", "transport.outbox.wake", {}, id=ids.next())
