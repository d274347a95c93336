"""The transport actor: the runtime's link to the AppServer (docs/protocol.md §4).

It runs a `link.Link`, the role-neutral client end of the WebSocket (hello, sync from a
cursor, live delivery, cumulative acks, submissions resent with their idempotency key until
their verdict, heartbeats, reconnects with exponential backoff and jitter), as a `runtime`.

- **Cursor.** The link starts from the store's cursor, the highest seq persisted. It acks
  a seq to the server only when the router's answer to a batch (`router.inbound`, a call
  answered after the store's commit and the deliveries) says every message up to it is
  durable (docs/protocol.md §4.4).
- **Batching.** Whatever the link has received is cut into `router.inbound` messages of up
  to `batch_items` items / `batch_bytes` bytes; at most `inflight_batches` are unpersisted
  at once, which is the back-pressure of a catch-up. A run of nothing but the runtime's
  own envelopes coming back waits up to `OWN_ECHO_WAIT_S` for what follows.
- **Outbox.** Pending items are read from the store in local order and enqueued on the
  link with the envelope id as key (docs/protocol.md §4.5); each verdict goes to the store
  (`store.outbox.settle`), which settles it and tells the app that sent the item. After a
  restart every pending item is enqueued again with the same key: the server returns its
  first verdict.
- **The tool router's envelopes** (`transport.submit`: a call's receipts and final, an
  inventory) come straight from the tool router, which keeps its own record. Each message
  is enqueued on the link as it comes and acknowledged only once the AppServer has given
  every envelope in it a verdict (`ACK_LATER`): until then the mailbox keeps it, and a
  restarted transport is given it again and enqueues it again under the same keys. A
  refused envelope is audited (`store.audit`), never retried.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from pathlib import Path
from typing import Any, Final

import trio

from actors.kernel import ACK_LATER, Actor, Message, derive_id, handles, new_id
from actors.runtime_token import TokenError, load_token
from contracts import ContractError
from link import Link, LinkFailed, LinkState, Received, Submission

from ._lifecycle import Lifecycle, lifecycle_of
from .door import DOOR, Queued, Submit, ToolEnvelope, Wake

log = logging.getLogger("lineup.transport")

# How long a batch's answer is awaited before it is asked again under the same id (the
# router answers a repeated id once it has handled the first).
HAND_OVER_WAIT_S: Final = 10.0
# The runtime's own envelopes come back in the stream (the conversation's record of what it
# said). A run of nothing else waits up to this long for what comes next and goes to the
# router with it: a tool call's receipt and final then share the next run instead of
# taking the inbound path twice on their own. Only the stream's ack waits for them.
OWN_ECHO_WAIT_S: Final = 0.2
OWN_IDS_KEPT: Final = 4096  # the ids of the newest envelopes submitted, to know their echo

_LINK_STATES: tuple[LinkState, ...] = ("connecting", "syncing", "live", "backoff", "failed")


class TransportActor(Actor):
    door = DOOR

    async def on_start(self) -> None:
        config = self.config
        self.url: str | None = config.get("appserver_url")
        self.token_file: str | None = config.get("token_file")
        # The data dir whose own token (`token_file` there) is kept in the keyring if any.
        self.data_dir: str | None = config.get("data_dir")
        self.device_id = str(config.get("device_id", "lineup-device"))
        self.batch_items = int(config.get("batch_items", 512))
        self.batch_bytes = int(config.get("batch_bytes", 600 * 1024))
        self.inflight_batches = int(config.get("inflight_batches", 8))
        self.call_timeout = float(config.get("call_timeout", 2.0))
        self.link: Link | None = None
        self.lifecycle: Lifecycle | None = None
        self.persisted = 0
        self.inflight: deque[int] = deque()  # last seq of each batch not yet persisted
        self.room = trio.Event()
        self.outbox_wake = trio.Event()
        # What wakes brought since the outbox was last taken: items (submitted without
        # reading them back when they follow on from the last one taken), or a wake
        # without items, which means "read what is pending".
        self.woken: list[Queued] = []
        self.woken_unread = False
        self.forwarded = 0
        # The tool router's envelopes: those given before the link was up (their message's
        # seq, the items), and those waiting for their verdict, by key.
        self.unsent: list[tuple[int, list[ToolEnvelope]]] = []
        self.submitting: dict[str, Submission] = {}
        self.own_ids: dict[str, None] = {}  # the newest `OWN_IDS_KEPT` ids submitted
        self.nursery.start_soon(self._main)

    def statistics_extra(self) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "lifecycle": self.lifecycle,
            "persisted": self.persisted,
            "forwarded": self.forwarded,
            "inflight_batches": len(self.inflight),
            "tool_envelopes_waiting": len(self.submitting),
        }
        if self.link is not None:
            link = self.link.statistics()
            stats.update(
                link_state=link.state,
                connects=link.connects,
                acked=link.acked,
                pending_submits=link.pending_submits,
                last_error=link.last_error,
            )
        return stats

    # -- messages from the router and the tool router -------------------------------------

    @handles("transport.outbox.wake")
    async def wake(self, msg: Message[Wake]) -> None:
        items = (msg.body or {}).get("items")
        if items:
            self.woken.extend(items)
        else:
            self.woken_unread = True
        self.outbox_wake.set()

    @handles("transport.submit")
    async def submit(self, msg: Message[Submit]) -> Any:
        """The tool router's envelopes for the agent: on the link now (or once it is up),
        and this message acknowledged once every one has its verdict."""
        items = list(msg.body["items"])
        if self.link is None:
            self.unsent.append((msg.seq, items))
        else:
            self._submit(self.link, msg.seq, items)
        return ACK_LATER

    def _submit(self, link: Link, seq: int, items: list[ToolEnvelope]) -> None:
        waiting: list[tuple[str, Submission]] = []
        refused: list[tuple[str, ContractError]] = []
        for item in items:
            key = str(item["key"])
            submission = self.submitting.get(key)  # given again while it waits: the same
            if submission is None:
                try:
                    submission = self._enqueue(link, item["envelope"], key)
                except ContractError as exc:
                    refused.append((key, exc))
                    continue
                self.submitting[key] = submission
            waiting.append((key, submission))
        self.nursery.start_soon(self._await_submitted, seq, waiting, refused)

    async def _await_submitted(
        self,
        seq: int,
        waiting: list[tuple[str, Submission]],
        refused: list[tuple[str, ContractError]],
    ) -> None:
        for key, exc in refused:
            await self._envelope_refused(key, str(exc.code), exc.detail)
        for key, submission in waiting:
            try:
                result = await submission.verdict()
            except LinkFailed:
                return  # refused for good: the message stays in the mailbox for next time
            finally:
                self.submitting.pop(key, None)
            if result.status != "accepted":
                await self._envelope_refused(
                    key, str(result.code or "rejected"), result.detail or ""
                )
        self.ack(seq)

    async def _envelope_refused(self, key: str, code: str, detail: str) -> None:
        """A tool router's envelope the AppServer (or the link) refused: audited once."""
        log.warning("the AppServer refused %s: %s %s", key, code, detail)
        audit = {"code": code, "detail": detail[:500], "message_id": key}
        await self.cast("store", "store.audit", audit, id=derive_id(key, 0x5F))

    def _take_woken(self, after: int) -> list[Queued] | None:
        """The woken items that follow on from order `after` without a gap, or None when
        the pending ones must be read from the store (a gap, or a wake without items)."""
        items = sorted((i for i in self.woken if int(i["order"]) > after), key=lambda i: i["order"])
        unread, self.woken, self.woken_unread = self.woken_unread, [], False
        if unread or not items:
            return None if unread else []
        for expected, item in enumerate(items, after + 1):
            if int(item["order"]) != expected:
                return None
        return items

    # -- the link -----------------------------------------------------------------------

    async def _report(self, state: Lifecycle, detail: str = "") -> None:
        if state != self.lifecycle:
            self.lifecycle = state
            log.info("lifecycle: %s %s", state, detail)
            await self.cast("store", "store.lifecycle.set", {"state": state, "detail": detail})

    async def _store(self, type: str, body: Any) -> Any:
        return await self.call_until_answered(
            "store", type, body, id=new_id(), max_timeout=self.call_timeout
        )

    async def _main(self) -> None:
        await self._report("restoring")
        cursor = int((await self._store("store.cursor.get", {}))["cursor"])
        self.persisted = cursor
        if not self.url or not self.token_file:
            await self._report("offline_degraded", "no AppServer configured")
            return
        data_dir = Path(self.data_dir) if self.data_dir else None
        try:  # the keyring blocks on the bus: in a thread, with its own deadline
            token = await trio.to_thread.run_sync(
                load_token, Path(self.token_file), data_dir, dict(os.environ)
            )
        except TokenError as exc:
            await self._report("offline_degraded", str(exc))
            return
        self.link = Link(
            self.url,
            role="runtime",
            peer_id=self.device_id,
            token=token,
            cursor=cursor,
            client_name="lineup-runtime",
            # At most this many received envelopes wait here for the router; the rest of a
            # backlog waits on the AppServer (paging is ours to ask for).
            max_buffered=int(self.config.get("max_buffered", 4096)),
            # The router validates each message's text (filter chain step 1): the link
            # hands over the text as the server sent it, parsed once, never re-encoded.
            raw_messages=True,
            backoff_initial=float(self.config.get("backoff_initial", 0.05)),
            backoff_max=float(self.config.get("backoff_max", 2.0)),
        )
        unsent, self.unsent = self.unsent, []
        for seq, items in unsent:
            self._submit(self.link, seq, items)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._run_link, self.link)
            nursery.start_soon(self._watch, self.link)
            nursery.start_soon(self._pump, self.link, nursery)
            nursery.start_soon(self._drain_outbox, self.link, nursery)

    async def _run_link(self, link: Link) -> None:
        try:
            await link.run()
        except LinkFailed as exc:  # refused for good: stay up, offline, and say why
            await self._report("offline_degraded", str(exc))

    async def _watch(self, link: Link) -> None:
        """Turn link states into lifecycle reports."""
        was_online = False
        failures = 0
        while True:
            state = link.state
            if state == "live":
                was_online, failures = True, 0
            elif state == "backoff":
                failures += 1
            await self._report(lifecycle_of(state, was_online=was_online, failures=failures))
            if state == "failed":
                return
            try:
                await link.wait_state(*(s for s in _LINK_STATES if s != state))
            except LinkFailed:
                continue

    def _enqueue(self, link: Link, envelope: str, key: str) -> Submission:
        """An envelope onto the link, its id kept to know it when it comes back."""
        message = json.loads(envelope)
        submission = link.enqueue(message, idempotency_key=key)
        self.own_ids[str(message.get("id"))] = None
        if len(self.own_ids) > OWN_IDS_KEPT:
            del self.own_ids[next(iter(self.own_ids))]
        return submission

    async def _gather(self, link: Link, first: Received) -> list[tuple[int, str]]:
        """A batch for the router: what the link has received, up to `batch_items` and
        `batch_bytes`, and, while it is all the runtime's own envelopes coming back, what
        comes within `OWN_ECHO_WAIT_S` more."""
        items: list[tuple[int, str]] = []
        size, own, received = 0, True, first
        while True:
            text = _text(received)
            items.append((received.seq, text))
            size += len(text)
            own = own and received.message.get("id") in self.own_ids
            if len(items) >= self.batch_items or size >= self.batch_bytes:
                return items
            try:
                received = link.messages.receive_nowait()
                continue
            except trio.WouldBlock:
                if not own:
                    return items
            except trio.EndOfChannel:
                return items
            with trio.move_on_after(OWN_ECHO_WAIT_S):
                try:
                    received = await link.messages.receive()
                except trio.EndOfChannel:
                    return items
                continue
            return items

    async def _pump(self, link: Link, nursery: trio.Nursery) -> None:
        """The link's messages, in order, cut into batches for the router."""
        async for first in link.messages:
            items = await self._gather(link, first)
            while len(self.inflight) >= self.inflight_batches:
                self.room = trio.Event()
                await self.room.wait()
            self.inflight.append(items[-1][0])
            # Each batch is sent before the next one (`start` returns once it is sent), and
            # its answer awaited beside the others.
            await nursery.start(self._hand_over, link, items)
            self.forwarded += len(items)

    async def _hand_over(
        self,
        link: Link,
        items: list[tuple[int, str]],
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """One batch to the router, which answers once it is durable and delivered: how far
        the stream is durable (acked to the server, docs/protocol.md 4.4, which frees the
        window) and whether the run queued answers in the outbox."""
        answer = await self.call_until_answered(
            "router",
            "router.inbound",
            {"items": items},
            id=new_id(),
            first_timeout=HAND_OVER_WAIT_S,
            max_timeout=HAND_OVER_WAIT_S,
            task_status=task_status,
        )
        self.persisted = max(self.persisted, int(answer["cursor"]))
        while self.inflight and self.inflight[0] <= self.persisted:
            self.inflight.popleft()
        self.room.set()
        link.ack(self.persisted)
        if answer.get("outbox"):
            self.woken_unread = True
            self.outbox_wake.set()

    async def _drain_outbox(self, link: Link, nursery: trio.Nursery) -> None:
        """Outbox items, in local order, onto the link (those a wake brought, or read from the
        store); each verdict to the store."""
        after, read = 0, True  # the first round reads what was pending before this start
        while True:
            self.outbox_wake = trio.Event()
            items = None if read else self._take_woken(after)
            full = False
            if items is None:
                reply = await self._store("store.outbox.pending", {"after": after, "limit": 256})
                items, full = reply["items"], len(reply["items"]) == 256
            read = False
            for item in items:
                after = max(after, int(item["order"]))
                try:
                    submission = self._enqueue(link, item["envelope"], item["key"])
                except ContractError as exc:
                    await self._verdict(
                        item["key"],
                        {"status": "rejected", "code": str(exc.code), "detail": exc.detail},
                    )
                    continue
                nursery.start_soon(self._await_verdict, item["key"], submission)
            if full:
                read = True  # more than one page was pending
            elif not (self.woken or self.woken_unread):
                await self.outbox_wake.wait()

    async def _await_verdict(self, key: str, submission: Submission) -> None:
        try:
            result = await submission.verdict()
        except LinkFailed:
            return  # the link is refused for good; the item stays pending for next time
        verdict: dict[str, Any] = {"status": result.status}
        if result.seq is not None:
            verdict["seq"] = result.seq
        if result.code is not None:
            verdict["code"] = str(result.code)
            verdict["detail"] = result.detail or ""
        await self._verdict(key, verdict)

    async def _verdict(self, key: str, verdict: dict[str, Any]) -> None:
        # The id derives from the key: a verdict reported twice is delivered once.
        await self.cast(
            "store", "store.outbox.settle", {"key": key, **verdict}, id=derive_id(key, 0x5E)
        )


def _text(received: Received) -> str:
    if received.text is not None:
        return received.text
    return json.dumps(received.message, ensure_ascii=False, separators=(",", ":"))
