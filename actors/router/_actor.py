"""The router actor: every inbound envelope through the filter chain, every outbound action.

Effects are made replay-safe by deterministic ids: everything a handler sends gets
`derive_id(handled message id, n)` in a fixed order, and what it delivers is decided by
the store's reply (recorded with the persist transaction), not by what the router happens
to remember. A replayed handler therefore sends the same messages with the same ids, and
the mailbox keeps the first of each.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import trio
from pydantic import JsonValue

from actors.contracts import Code, ContractError
from actors.kernel import Actor, DerivedIds, Message, handles, new_id

from ._delivery import project, rejection_envelope, tool_call_view, user_envelope
from ._filter_chain import Accepted, FilterContext, Rejected, check_inbound
from .door import DOOR, Apps, Duplicates, Inbound

log = logging.getLogger("lineup.router")


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
    """One accepted message as the store keeps it, with its app projection if delivered."""
    item = {
        "seq": a.seq,
        "id": a.env.id,
        "conversation_id": a.env.scope.conversation_id,
        "app_scope": a.env.scope.app_scope,
        "type": a.env.type,
        "sender_kind": a.env.sender.kind,
        "sender_id": a.env.sender.id,
        "envelope": a.text,
        "deliver_to": a.deliver_to,
    }
    if a.deliver_to is not None:
        item["view"] = project(a.env, a.seq)
    if a.to_tool_router:
        item["tool_call"] = tool_call_view(a.env, a.seq)
    return item


def _check_user_side(app: str) -> None:
    if app != "chat":  # only the Interaction App speaks for the user
        raise ContractError(Code.SENDER_NOT_ALLOWED, f"{app!r} cannot send as the user")


class RouterActor(Actor):
    """Filter chain, persistence through the store, delivery to app inboxes."""

    door = DOOR

    async def on_start(self) -> None:
        self.ctx = FilterContext.from_config(self.config.get("apps"))
        self.user_id = str(self.config.get("user_id", "user"))
        self.call_timeout = float(self.config.get("call_timeout", 2.0))
        self.floor = 0
        self.forwarded = 0  # accepted messages handed to the store for an app's inbox
        self.rejected = 0
        # What the router needs from the store is loaded in a task of its own, and every
        # handler waits for it before it filters anything.
        self.loaded = trio.Event()
        self.nursery.start_soon(self._load)

    async def _load(self) -> None:
        reply = await self._store("store.conversations", {}, new_id())
        self.ctx.conversations.update(reply["conversations"])
        registry = await self._store("store.apps.load", {}, new_id())
        self._set_apps(registry["settings"].get("routing"))
        self.floor = (await self._store("store.cursor.get", {}, new_id()))["cursor"]
        self.loaded.set()

    def statistics_extra(self) -> dict[str, Any]:
        return {"forwarded": self.forwarded, "rejected": self.rejected, "floor": self.floor}

    async def _store(self, type: str, body: Any, id: str) -> Any:
        return await self.call_until_answered(
            "store", type, body, id=id, max_timeout=self.call_timeout
        )

    def _set_apps(self, apps: dict[str, dict[str, Any]] | None) -> None:
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
    async def inbound(self, msg: Message[Inbound]) -> None:
        """A run of the AppServer stream: `items` [[seq, message JSON text], ...], in order."""
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
        outbox = []
        for rejection in rejected:
            answer = (
                rejection_envelope(rejection.env, rejection.code, rejection.detail)
                if rejection.env is not None and rejection.env.sender.kind == "agent"
                else None
            )
            if answer is not None:
                outbox.append(_outbox_item(answer))
        request = {
            "items": [_persist_item(a) for a in accepted],
            "rejections": [
                {
                    "seq": r.seq,
                    "message_id": r.env.id if r.env is not None else r.message_id,
                    "code": str(r.code),
                    "detail": r.detail,
                }
                for r in rejected
            ],
            "outbox": outbox,
            "associate": associate,
            "cursor": cursor,
            # The store delivers the fresh ones and tells the transport once it committed
            # (`actors.store`'s docstring, "Why the store delivers"): a cast, no reply.
            "deliver": True,
        }
        await self.cast("store", "store.inbound.persist", request, id=ids.next())
        # Everything up to `cursor` is now in the store's durable mailbox: a re-sent
        # rejection below it was in this request already.
        self.floor = max(self.floor, cursor)
        self.rejected += len(rejected)
        self.forwarded += sum(1 for a in accepted if a.deliver_to is not None)

    @handles("router.inbound.duplicates")
    async def inbound_duplicates(self, msg: Message[Duplicates]) -> None:
        """Agent messages the store found stored already under another seq:
        `items` [{id, seq, envelope}]; each agent gets its `duplicate` answer."""
        _only_from(msg, "store")
        ids = DerivedIds(msg.id)
        items = []
        for dup in msg.body["items"]:
            verdict = check_inbound(int(dup["seq"]), dup["envelope"], self.ctx)
            if verdict.env is None or verdict.env.sender.kind != "agent":
                continue
            answer = rejection_envelope(
                verdict.env, "duplicate", f"id already stored ({dup['seq']})"
            )
            if answer is not None:
                items.append(_outbox_item(answer))
        if items:
            await self._store("store.outbox.enqueue", {"items": items}, ids.next())
            await self.cast("transport", "transport.outbox.wake", {}, id=ids.next())

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
                    "id": body.get("id"),
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
