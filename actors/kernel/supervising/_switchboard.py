"""The supervisor's switchboard: one task that owns the mailbox file and every delivery.

Readers of the actors' channels hand it operations through one bounded queue. It takes
whatever has arrived (up to `batch_max`), applies it in one transaction, commits, and only
then forwards what the batch made deliverable: group commit when the input drains, never
on a timer, and never a frame forwarded before its commit. Because one
task does all of this, the credit and backlog bookkeeping needs no locks.

The rules:

- **Commit before delivery.** The switchboard takes every operation that has arrived (up
  to `batch_max`, 256), applies them in one transaction, commits, and only then forwards.
- **Attempts are durable before delivery.** A message to an actor with free credits and
  no backlog is inserted already inflight with `attempts=1` (one write); otherwise it is
  pending and later taken from disk by `take()`, which raises `attempts` in the same
  transaction that hands it out.
- **Credits.** Each actor has `window` deliveries in flight (default 2048); the rest waits
  on disk, so a stalled actor costs disk, not supervisor memory. Readers feed the
  switchboard through a bounded queue, so a fast sender is slowed down by socket
  back-pressure.
- **Bodies are stored as sent.** The supervisor routes by the few header fields (it
  decodes the frame to check them, and an app's body to bound it: `_gate`), stores the
  bytes as the sender packed them (the row says who sent them), and delivers them by
  appending `from`, `seq` and `attempt` to those bytes: it never re-encodes what actors
  say. A child's reader hands over what one receive brought as one list, and a batch's
  deliveries go to each channel in one go.
- **Order.** FIFO per (sender, recipient): frames of one channel are applied in order, and
  deliveries go out in `seq` order. Handlers run one at a time, in order.
- **Acks.** An actor acks after its handler returned. Acks of seqs the current incarnation
  does not hold are ignored. An ack moves the actor's cursor (`_mailbox`). A batch of acks
  alone writes nothing: its cursors are written with the next batch that writes, or half a
  second later (`write_held_acks`). A crash loses at most those, and losing an ack only
  hands its message out again, which its recipient applies once.
- **Restart and replay.** When an incarnation ends, its inflight messages return to
  pending and are redelivered in order to the next one; when the supervisor starts, every
  inflight row returns to pending (`recover()`).
- **Poison messages.** A handler exception sends `kernel.fail`, naming its message. A crash
  (an abnormal exit, not a kill the supervisor or the operator asked for) with exactly one
  delivery in flight blames that delivery. With several in flight the one being handled is
  unknown (acks are batched), so they become *suspects*: redelivered with an in-flight
  limit of one that doubles with each ack, so that a crash names its message and no
  innocent message is counted. Each blame raises `failures`; at `max_deliver` (default 3)
  the message is dead, with its error, and a caller awaiting its reply gets `dead_letter`.
  `lineup debug redrive ID` moves it back to pending.
- **Durability barrier.** Before a batch's answers to the UI and control sockets and
  before its deliveries to an actor whose spec `reaches_outside`, the WAL is synced
  (`_leaves`); but not for deliveries from an actor that names the recipient in its spec's
  `syncs_before`: it synced its own file before it sent them and sends them again under
  the same ids after a crash, so a power cut that takes them from the mailbox also takes
  the acks that would keep them from being sent again.
- **Checkpoints off the commit path.** `wal_autocheckpoint` is off on the switchboard's
  connection; once the WAL has grown by about 2,000 pages (8 MB, estimated from the
  commits and frames since the last one: small commits write whole pages), a second
  connection runs a PASSIVE checkpoint on a worker thread (p99 at 1,000 msg/s: about
  1.2 ms with it, 55 ms with SQLite's inline one). While the switchboard writes, such a
  checkpoint never reaches the WAL's end, so SQLite would never start the WAL over and it
  would grow through a burst (an fsync that grows a file costs about twice one that
  overwrites it); so the switchboard finishes each background checkpoint itself between
  two batches, and the WAL is reused in place and stays a few MB. The count starts from
  the WAL a killed runtime left, so a runtime killed again and again before 2,000 pages
  does not grow it without end. Control-socket reads use a third, read-only connection.
- **A full disk.** Below 8 MiB free on the data dir's file system the supervisor holds its
  commits, backing off up to a second, and an actor whose handler fails with ENOSPC (or
  SQLite's "database or disk is full") runs it again after a backoff instead of counting a
  failure, so nothing goes dead for want of space. `lineup debug status` says `degraded`
  with the reason, and everything goes on by itself once there is room. A commit that
  starts above the reserve and runs out of space midway still stops the supervisor; the
  next start recovers it, and nothing accepted is lost.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import msgpack
import trio

from .._faults import crash_point
from ..wire import Channel, ChannelClosed, Frame, delivery
from ._mailbox import MailboxStore, PruneStep, disk_full

log = logging.getLogger("lineup.supervisor")

_pack = msgpack.Packer(use_bin_type=True).pack


@dataclass
class Endpoint:
    """The delivery side of one mailbox: credits and what is in flight to its actor."""

    name: str
    window: int = 64
    max_deliver: int = 3
    channel: Channel | None = None  # set once the incarnation is ready: deliveries
    reply_channel: Channel | None = None  # set at its hello: replies to calls in on_start
    credits: int = 0
    # Seqs in flight, in the order they were handed out (a dict as an ordered set).
    inflight: dict[int, None] = field(default_factory=dict)
    # Whether they were handed out in increasing seq order since `inflight` was last
    # emptied (they are: see `_op_ack`; checked, not assumed).
    in_order: bool = True
    last_handed: int = 0
    backlog: bool = True  # pending rows may wait on disk; deliver from there first
    reaches_outside: bool = False  # `ChildSpec.reaches_outside`: a barrier precedes delivery
    # `ChildSpec.syncs_before`: the actors reaching outside whose deliveries from this one
    # need no barrier (it synced its own file before it sent them).
    syncs_before: frozenset[str] = frozenset()
    delivered: int = 0
    acked: int = 0
    # Seqs that were in flight when the actor died holding several deliveries. Acks are
    # batched, so the oldest unacked one is not necessarily the one being handled. Until
    # each suspect is acked or dead, the in-flight limit restarts at one and doubles with
    # each ack: a crash with one delivery in flight names its message exactly, so no
    # innocent message is counted as poison, and a crash-free replay is back at full
    # window after a few round trips.
    suspects: set[int] = field(default_factory=set)
    probe: int = 1
    # Seqs whose handler has returned while their effect waits outside the actor (a
    # submission to the AppServer awaiting its verdict: `kernel.hold`): in flight until
    # acked, and redelivered to the next incarnation, but never blamed for a crash.
    held: set[int] = field(default_factory=set)
    # Seqs of metered senders' messages (apps) not yet handled here -> their sender.
    metered: dict[int, str] = field(default_factory=dict)

    def forget_inflight(self) -> None:
        self.inflight.clear()
        self.held.clear()
        self.in_order = True
        self.last_handed = 0

    @property
    def room(self) -> int:
        """How many more deliveries the actor may have in flight now."""
        if self.suspects:  # a held delivery is not being handled: it takes no probe
            return min(self.credits, self.probe - len(self.inflight) + len(self.held))
        return self.credits

    @property
    def direct_room(self) -> int:
        """How many new messages may skip the disk queue: none unless the actor is up and
        nothing waits on disk before them."""
        return self.room if self.channel is not None and not self.backlog else 0


@dataclass
class Outcome:
    """Filled in by the switchboard for an operation that someone awaits."""

    done: trio.Event = field(default_factory=trio.Event)
    value: Any = None


def _packed(frame: Frame) -> bytes:
    """A message as the mailbox stores it: without `from`, which its row says and each
    delivery appends."""
    packed: bytes = _pack({key: value for key, value in frame.items() if key != "from"})
    return packed


# What a batch forwards after its commit: per channel, in order.
Outbox = defaultdict[Channel, list[Frame | bytes]]

# The operations that write nothing of their own but acks, which a batch of them alone
# holds in memory (`MailboxStore.begin(acks_only=True)`).
_ACKS = frozenset({"ack", "hold"})

# Operations: (kind, actor name, payload, outcome or None, the message as its sender packed
# it or None)
Op = tuple[str, str, Any, Outcome | None, bytes | None]


@dataclass(frozen=True)
class TraceRecord:
    at: float
    sender: str
    to: str
    type: str
    id: str
    event: str
    detail: str = ""  # a lifecycle event's reason


class Switchboard:
    def __init__(self, store: MailboxStore, *, batch_max: int, queue_size: int) -> None:
        self.store = store
        self.batch_max = batch_max
        self.endpoints: dict[str, Endpoint] = {}
        # Readers queue what one receive brought as one list: the queue holds lists, and
        # `queue_size` (in frames) becomes lists of up to a receive's worth each.
        self._send, self._receive = trio.open_memory_channel[list[Op]](max(1, queue_size // 64))
        self._carry: list[Op] = []  # what a batch left over of the lists it took
        self.tracers: list[Callable[[TraceRecord], None]] = []
        # Operation kind -> its `_op_` method, looked up once rather than per frame.
        self._ops: dict[str, Callable[..., Any]] = {
            attr[4:]: getattr(self, attr) for attr in dir(self) if attr.startswith("_op_")
        }
        self.batches = 0
        # At NORMAL a commit is not synced: what it holds may go with the power. So the WAL
        # is synced (a barrier) before any of it leaves the device or tells the user it is
        # done (`_leaves`); a crash of any process still loses nothing committed.
        self.barriers = store.synchronous == "NORMAL"
        # Of this batch's frames for each channel, the deliveries needing no barrier.
        self._synced_out: dict[Channel, int] = {}
        self.syncs = 0
        self.frames = 0
        self.disk_full = False  # batches are held until the data dir's disk has room
        # Set when the WAL has grown by about `checkpoint_pages` pages since a checkpoint.
        # SQLite does not tell how big the WAL is, so it is estimated: a commit writes at
        # least a page of each B-tree it changes (about 2: rows and ids), and a frame fills
        # about a sixth of a 4 KiB page. Counting frames alone let the WAL of a paced run,
        # a frame a commit, grow to 150 MB before its first checkpoint, which then stalled
        # commits for up to 100 ms.
        self.wal_dirty = trio.Event()
        self.checkpoint_pages = 2_000
        # A runtime killed (or cut off by a power cut) leaves its WAL uncheckpointed: it
        # counts, or a runtime killed again and again before each run wrote 2,000 pages
        # would grow the WAL without end (and every start reads it all).
        self._wal_pages = store.wal_pages()
        self._finish_checkpoint = False  # a background checkpoint ended: finish it here
        self._checkpointing = False  # a background checkpoint is running
        # The mailbox's upkeep is due by what was written, never by a poll: `prune_due` is
        # set once `prune_after_frames` more frames came through, and `wrote` by any batch
        # (an idle runtime sets neither, and its upkeep tasks sleep).
        self.prune_due = trio.Event()
        self.prune_after_frames = 0
        self.wrote = trio.Event()
        self.acks_held = trio.Event()  # set when a batch held its acks (`write_held_acks`)
        # An app's sending credits: how many of its messages are stored and not yet
        # handled. Its reader waits while that is at its limit (`wait_for_room`).
        self.metered: set[str] = set()
        self.outstanding: dict[str, int] = {}
        self._room: dict[str, trio.Event] = {}

    def endpoint(self, name: str) -> Endpoint:
        ep = self.endpoints.get(name)
        if ep is None:
            ep = self.endpoints[name] = Endpoint(name)
        return ep

    async def submit(self, kind: str, name: str, payload: Any = None) -> None:
        await self.submit_many([(kind, name, payload, None, None)])

    async def submit_many(self, ops: list[Op]) -> None:
        # Not yielding while the queue has room is what makes group commit group: a reader
        # queues everything one receive brought before the switchboard runs its batch.
        if not ops:
            return
        try:
            self._send.send_nowait(ops)
        except trio.WouldBlock:
            await self._send.send(ops)

    async def wait_for_room(self, sender: str, limit: int) -> None:
        """Return once fewer than `limit` of a metered sender's messages wait unhandled."""
        while self.outstanding.get(sender, 0) >= limit:
            event = self._room.get(sender)
            if event is None:
                event = self._room[sender] = trio.Event()
            await event.wait()

    def _count_out(self, ep: Endpoint, seq: int, sender: str) -> None:
        ep.metered[seq] = sender
        self.outstanding[sender] = self.outstanding.get(sender, 0) + 1

    def _count_done(self, ep: Endpoint, seqs: list[int]) -> None:
        for seq in seqs:
            sender = ep.metered.pop(seq, None)
            if sender is not None:
                self.outstanding[sender] -= 1
                event = self._room.pop(sender, None)
                if event is not None:
                    event.set()

    async def request(self, kind: str, name: str, payload: Any = None) -> Any:
        """Submit an operation and wait for the switchboard to have committed it."""
        outcome = Outcome()
        await self._send.send([(kind, name, payload, outcome, None)])
        await outcome.done.wait()
        return outcome.value

    async def run_checkpoints(self, checkpointer: MailboxStore) -> None:
        """Keep the WAL short: a worker thread copies it back while commits go on.

        While the switchboard writes, such a checkpoint never catches up with the WAL's
        end, so SQLite never starts the WAL over and it grows through a whole burst; a
        commit that grows the file costs its fsync twice as much as one that overwrites
        it (measured: 2.7 against 1.6 us a message). So the switchboard finishes each
        background checkpoint itself, between two batches: what is left is what was
        written meanwhile (a few ms), and the next commit starts the WAL over in place.
        """
        while True:
            await self.wal_dirty.wait()
            self.wal_dirty = trio.Event()
            self._checkpointing = True
            try:
                await trio.to_thread.run_sync(checkpointer.checkpoint)
            finally:
                self._checkpointing = False
            self._finish_checkpoint = True

    async def truncate_wal_when_idle(self, idle_s: float) -> None:
        """Once no batch came for `idle_s`, copy the whole WAL back and cut it to nothing:
        a runtime that went quiet leaves no WAL for the next start to read. It runs on
        the writer's connection between two batches (none is ever half-applied: a batch
        is applied without yielding), never beside a background checkpoint."""
        while True:
            await self.wrote.wait()
            batches = -1
            while batches != self.batches:
                batches = self.batches
                await trio.sleep(idle_s)
            self.wrote = trio.Event()
            if not self._checkpointing and not self._finish_checkpoint:
                self.store.truncate_wal()
                self._wal_pages = 0

    async def run(self) -> None:
        while True:
            ops = self._carry or await self._receive.receive()
            while len(ops) < self.batch_max:
                try:
                    ops = ops + self._receive.receive_nowait()
                except trio.WouldBlock:
                    break
            # At most `batch_max` frames a transaction; the rest opens the next one.
            ops, self._carry = ops[: self.batch_max], ops[self.batch_max :]
            await self._wait_for_room()
            self._apply_batch(ops)
            if self._carry:
                await trio.lowlevel.checkpoint()

    async def _wait_for_room(self) -> None:
        """Hold the batch while the data dir's disk is full: a commit that fails for want
        of space is rolled back by SQLite, so it is never started; the frames wait in
        memory and their senders wait for their outcomes, as under any load."""
        delay = 0.05
        while disk_full(self.store.path.parent):
            if not self.disk_full:
                log.warning("the data dir's disk is full: commits wait for room")
            self.disk_full = True
            await trio.sleep(delay)
            delay = min(delay * 2, 1.0)
        if self.disk_full:
            log.warning("the data dir's disk has room again: commits go on")
        self.disk_full = False

    # -- one batch ---------------------------------------------------------------------

    def _apply_batch(self, ops: list[Op]) -> None:
        out: Outbox = defaultdict(list)
        touched: set[str] = set()
        self._synced_out = {}
        self.store.begin(acks_only=all(op[0] in _ACKS for op in ops))
        try:
            run: list[Op] = []  # consecutive messages, inserted with one statement
            for op in ops:
                kind, name, payload, outcome, _ = op
                if kind == "message" and outcome is None:
                    run.append(op)
                    continue
                self._insert_run(run, out, touched)
                run = []
                value = self._ops[kind](name, payload, out, touched)
                if outcome is not None:
                    outcome.value = value
            self._insert_run(run, out, touched)
            for name in touched:
                self._pump(self.endpoints[name], out)
            # Inline, not on a worker thread: measured, the hand-off doubled p50 at
            # 1,000 msg/s, and in a burst the thread waits for the busy loop to give back
            # the GIL after every fsync (burst throughput fell by a quarter).
            wrote = self.store.commit()
        except BaseException:
            self.store.rollback()
            raise
        if self.barriers and self._leaves(ops, out):
            self.store.sync_wal()
            self.syncs += 1
        crash_point("supervisor.after_commit")
        self.frames += len(ops)
        if not wrote:  # acks alone, held for the next batch that writes
            if not self.acks_held.is_set():
                self.acks_held.set()
            self._forward(ops, out)
            return
        self.batches += 1
        if self.frames >= self.prune_after_frames and not self.prune_due.is_set():
            self.prune_due.set()
        if not self.wrote.is_set():
            self.wrote.set()
        self._wal_pages += 2 + len(ops) // 6
        if self._wal_pages >= self.checkpoint_pages:
            self._wal_pages = self.store.wal_pages()
            self.wal_dirty.set()
        self._forward(ops, out)
        if self._finish_checkpoint:
            self._finish_checkpoint = False
            self.store.checkpoint()

    def _forward(self, ops: list[Op], out: Outbox) -> None:
        """What a committed batch hands out, and the word to whoever waits on its ops."""
        for channel, frames in out.items():
            # A closed channel: its actor is down, and the down op requeues what was inflight.
            with contextlib.suppress(ChannelClosed):
                channel.send_many(frames)
        for _, _, _, outcome, _ in ops:
            if outcome is not None:
                outcome.done.set()

    async def write_held_acks(self, after_s: float) -> None:
        """Acks held in memory (a batch of acks alone writes nothing) are written with the
        next batch that writes, or `after_s` after they were held when none comes: the
        mailbox's own record of what is done trails the running supervisor by at most that
        (a crash meanwhile hands those messages out again, to recipients that apply a
        message once)."""
        while True:
            await self.acks_held.wait()
            self.acks_held = trio.Event()
            await trio.sleep(after_s)
            if self.store.acks_held:
                await self.request("write_acks", "")

    def _op_write_acks(self, name: str, payload: None, out: Outbox, touched: set[str]) -> None:
        """Nothing more: a batch that is not acks alone writes the acks held first."""

    def _leaves(self, ops: list[Op], out: Outbox) -> bool:
        """Whether what this batch committed is about to leave the device or reach the
        user: an answer to a socket's request (the UI socket's "stored", an operator's
        send), or a frame for an actor that reaches outside, but deliveries from an actor
        that synced its own file before it sent them (`syncs_before`)."""
        if any(outcome is not None for _, _, _, outcome, _ in ops):
            return True
        synced = self._synced_out
        for ep in self.endpoints.values():
            channel = ep.channel
            if not ep.reaches_outside or channel is None:
                continue
            if len(out.get(channel, ())) > synced.get(channel, 0):
                return True
        return False

    def _pump(self, ep: Endpoint, out: Outbox) -> None:
        """Hand out backlog from disk while the actor has credits."""
        room = ep.room
        if ep.channel is None or not ep.backlog or room <= 0:
            return
        batch = self.store.take(ep.name, room)
        if len(batch) < room:
            ep.backlog = False
        for taken in batch:
            self._hand_out(ep, out, taken.seq, taken.frame, taken.sender, attempt=taken.attempts)

    def _hand_out(
        self, ep: Endpoint, out: Outbox, seq: int, packed: bytes, sender: str, *, attempt: int
    ) -> None:
        assert ep.channel is not None
        ep.credits -= 1
        if seq <= ep.last_handed:
            ep.in_order = False
        ep.last_handed = seq
        ep.inflight[seq] = None
        ep.delivered += 1
        out[ep.channel].append(delivery(packed, sender, seq, attempt))
        if ep.reaches_outside:
            source = self.endpoints.get(sender)
            if source is not None and ep.name in source.syncs_before:
                self._synced_out[ep.channel] = self._synced_out.get(ep.channel, 0) + 1
        if self.tracers:
            self._trace({**msgpack.unpackb(packed, raw=False), "from": sender}, "deliver")

    def _trace(self, frame: Frame, event: str) -> None:
        record = TraceRecord(
            time.time(),
            str(frame.get("from", "")),
            str(frame.get("to", "")),
            str(frame.get("type", "")),
            str(frame.get("id", frame.get("corr", ""))),
            event,
        )
        for tracer in list(self.tracers):
            tracer(record)

    # -- operations ----------------------------------------------------------------------

    def _insert_run(self, run: list[Op], out: Outbox, touched: set[str]) -> None:
        """Messages in a row: decide each one's delivery as `_op_message` would, insert them
        all at once, then hand them out. A duplicate among them (rare: replays) sends the
        run through `_op_message` one by one instead."""
        if len(run) < 2:
            for _, sender, frame, _, packed in run:
                self._message(sender, frame, packed, out, touched)
            return
        # Per recipient: how many more of the run it takes directly (0 once one of them
        # had to wait on disk: the rest waits behind it), worked out at its first message.
        room: dict[str, int] = {}
        idle: dict[str, int] = {}  # recipient -> its first row here, when nothing was live
        rows: list[tuple[str, str, str, str, bytes, bool]] = []
        for _, sender, frame, _, packed in run:
            frame["from"] = sender  # an actor cannot speak for another
            to = frame["to"]
            left = room.get(to)
            if left is None:
                ep = self.endpoint(to)
                left = ep.direct_room
                if left > 0 and not ep.inflight:
                    idle[to] = len(rows)
            direct = left > 0
            room[to] = left - 1 if direct else 0
            rows.append((frame["id"], to, sender, frame["type"], packed or _packed(frame), direct))
        seqs = self.store.insert_many(rows)
        if seqs is None:
            for _, sender, frame, _, _ in run:
                self._op_message(sender, frame, out, touched)
            return
        for to, index in idle.items():
            self.store.settle(to, seqs[index])
        endpoints, tracing, metered = self.endpoints, bool(self.tracers), self.metered
        for (_, _, frame, _, _), seq, (_, to, sender, _, packed, direct) in zip(
            run, seqs, rows, strict=True
        ):
            if tracing:
                self._trace(frame, "send")
            ep = endpoints[to]
            if sender in metered:
                self._count_out(ep, seq, sender)
            if direct:
                self._hand_out(ep, out, seq, packed, sender, attempt=1)
            else:
                ep.backlog = True
                touched.add(to)

    def _op_message(self, sender: str, frame: Frame, out: Outbox, touched: set[str]) -> None:
        self._message(sender, frame, None, out, touched)

    def _message(
        self, sender: str, frame: Frame, packed: bytes | None, out: Outbox, touched: set[str]
    ) -> None:
        """One message, `packed` as its sender sent it if known."""
        frame["from"] = sender  # an actor cannot speak for another
        to = frame["to"]
        ep = self.endpoint(to)
        direct = ep.direct_room > 0
        idle = direct and not ep.inflight
        packed = packed or _packed(frame)
        seq = self.store.insert(
            message_id=frame["id"],
            recipient=to,
            sender=sender,
            type=frame["type"],
            frame=packed,
            inflight=direct,
        )
        if self.tracers:
            self._trace(frame, "send" if seq is not None else "duplicate")
        if seq is None:
            if frame.get("call"):
                self._resend_reply(frame["id"], sender, out)
            return
        if idle:
            self.store.settle(to, seq)
        if sender in self.metered:
            self._count_out(ep, seq, sender)
        if direct:
            self._hand_out(ep, out, seq, packed, sender, attempt=1)
        else:
            ep.backlog = True
            touched.add(to)

    def _resend_reply(self, request_id: str, caller: str, out: Outbox) -> None:
        stored = self.store.reply_for(request_id, caller)
        ep = self.endpoints.get(caller)
        if stored is not None and ep is not None and ep.reply_channel is not None:
            out[ep.reply_channel].append(msgpack.unpackb(stored, raw=False))

    def _op_reply(self, callee: str, frame: Frame, out: Outbox, touched: set[str]) -> None:
        # The reply names its caller (`to`): ids are unique per sender, not across senders.
        caller = frame.get("to")
        request = self.store.message(
            frame["corr"], sender=caller if isinstance(caller, str) else None
        )
        if request is None or request.recipient != callee:
            log.warning("%s replied to %s, which is not its request", callee, frame["corr"])
            return
        reply: Frame = {"type": "kernel.reply", "corr": request.id, "from": callee}
        reply.update({k: frame[k] for k in ("body", "error") if k in frame})
        self._deliver_reply(request.sender, reply, out)

    def _deliver_reply(self, caller: str, reply: Frame, out: Outbox) -> None:
        if not self.store.store_reply(reply["corr"], caller, _pack(reply)):
            return  # replayed handler: the first reply stands
        if self.tracers:
            self._trace({**reply, "to": caller}, "reply")
        ep = self.endpoints.get(caller)
        if ep is not None and ep.reply_channel is not None:
            out[ep.reply_channel].append(reply)

    def _op_ack(self, name: str, seqs: list[int], out: Outbox, touched: set[str]) -> None:
        crash_point("supervisor.after_forward")
        ep = self.endpoint(name)
        inflight = ep.inflight
        # Once each: a seq acked twice must not give its actor two credits.
        mine = [seq for seq in dict.fromkeys(seqs) if seq in inflight]
        if len(mine) != len(seqs):
            log.warning("%s acked %d seqs it does not hold (or twice)", name, len(seqs) - len(mine))
        if not mine:
            return
        # The common ack: an actor handles and acks its deliveries in order, so what it
        # acks is the oldest in flight. With nothing of its waiting on disk (no backlog)
        # and everything handed out in seq order, nothing of its below the next one in
        # flight is live any more: the cursor moves without reading a row. Anything else
        # is checked against the rows by `ack`.
        oldest = not ep.backlog and ep.in_order and mine == list(islice(inflight, len(mine)))
        for seq in mine:
            del inflight[seq]
        if ep.metered:
            self._count_done(ep, mine)
        if oldest:
            self.store.advance(name, next(iter(inflight)) - 1 if inflight else mine[-1])
        else:
            self.store.ack(name, mine)
        ep.suspects.difference_update(mine)
        ep.held.difference_update(mine)
        if ep.suspects:
            ep.probe = min(ep.window, ep.probe * 2)
        ep.credits += len(mine)
        ep.acked += len(mine)
        touched.add(name)

    def _op_hold(self, name: str, seqs: list[int], out: Outbox, touched: set[str]) -> None:
        """The actor's handler for these deliveries returned and their effect is under way
        outside it: they stay in flight until acked, and a crash does not blame them."""
        ep = self.endpoint(name)
        ep.held.update(seq for seq in seqs if seq in ep.inflight)
        if ep.suspects:
            touched.add(name)  # a held delivery frees its probe: the next suspect may go

    def _op_fail(self, name: str, payload: dict[str, Any], out: Outbox, touched: set[str]) -> None:
        """The handler raised: count it, then redeliver everything from the failed message."""
        ep = self.endpoint(name)
        seq = payload["seq"]
        if seq in ep.inflight:
            self._count_failure(ep, seq, str(payload.get("error", "")), out)
        self.store.requeue(name)
        ep.forget_inflight()
        ep.credits = ep.window
        ep.backlog = True
        if ep.channel is not None:
            out[ep.channel].append({"type": "kernel.reset"})
        touched.add(name)

    def _count_failure(self, ep: Endpoint, seq: int, error: str, out: Outbox) -> bool:
        dead = self.store.fail(seq, error, max_deliver=ep.max_deliver)
        if dead:
            ep.suspects.discard(seq)
            if ep.metered:
                self._count_done(ep, [seq])
            row = self.store.message_by_seq(seq)
            log.error(
                "message %s to %s is dead after %d failures: %s",
                row.id if row else seq,
                ep.name,
                ep.max_deliver,
                error,
            )
            if row is not None and msgpack.unpackb(row.frame, raw=False).get("call"):
                reply = {
                    "type": "kernel.reply",
                    "corr": row.id,
                    "from": ep.name,
                    "error": {"code": "dead_letter", "detail": error},
                }
                self._deliver_reply(row.sender, reply, out)
        return dead

    def _op_attach(self, name: str, channel: Channel, out: Outbox, touched: set[str]) -> None:
        """An actor's new incarnation said hello: replies can reach it from now on, while
        its `on_start` runs; deliveries wait for its ready."""
        self.endpoint(name).reply_channel = channel

    def _op_up(self, name: str, payload: dict[str, Any], out: Outbox, touched: set[str]) -> None:
        """An actor's new incarnation is ready: give it a full window, from disk."""
        ep = self.endpoint(name)
        ep.channel = ep.reply_channel = payload["channel"]
        ep.window = payload["window"]
        ep.max_deliver = payload["max_deliver"]
        ep.reaches_outside = payload.get("reaches_outside", False)
        ep.syncs_before = frozenset(payload.get("syncs_before", ()))
        ep.credits = ep.window
        ep.forget_inflight()
        ep.backlog = True
        touched.add(name)

    def _op_down(self, name: str, payload: dict[str, Any], out: Outbox, touched: set[str]) -> bool:
        """An actor's incarnation ended. Returns True if a message was being handled.

        With `blame` and a single delivery in flight, that delivery (the one its handler was
        running) is counted as a failure: that is how a poison message that crashes the
        process reaches the dead letters. With several in flight the one being handled is
        unknown (acks are batched), so none is blamed; they become suspects and are
        redelivered one at first (see `Endpoint.suspects`), where a crash names its message.
        Deliveries the actor holds (`kernel.hold`: handled, their effect under way outside)
        are neither blamed nor suspects.
        """
        ep = self.endpoint(name)
        handling = [seq for seq in ep.inflight if seq not in ep.held]
        attributed = bool(handling) and ep.channel is not None
        if attributed and payload.get("blame"):
            if len(handling) == 1:
                self._count_failure(ep, handling[0], str(payload.get("reason", "")), out)
            else:
                ep.suspects.update(handling)
            ep.probe = 1
        self.store.requeue(name)
        ep.channel = ep.reply_channel = None
        ep.forget_inflight()
        ep.credits = 0
        ep.backlog = True
        return attributed

    def _op_redrive(self, name: str, message_id: str, out: Outbox, touched: set[str]) -> bool:
        recipient = self.store.redrive(message_id)
        if recipient is None:
            return False
        self.endpoint(recipient).backlog = True
        touched.add(recipient)
        return True

    def _op_prune(
        self, name: str, bounds: tuple[int, int, int], out: Outbox, touched: set[str]
    ) -> PruneStep:
        """One chunk of a prune: (dedup horizon in epoch ms, the size cap in seqs, the seq
        to go on after)."""
        before_ms, max_done, after_seq = bounds
        return self.store.prune(
            done_before_ms=before_ms,
            after_seq=after_seq,
            **self.store.cap_bounds(max_done),
        )
