"""The actor base class: a handler per message type, `cast`, `call`, and a start hook.

Handlers run one at a time, in mailbox order. A message is acked only after its handler
returned, so a crash mid-handler means redelivery; every message a handler emits gets an
id derived from the message being handled, so a replayed handler re-emits the same ids and
the mailbox ignores them the second time.

    class Counter(Actor):
        async def on_start(self) -> None:
            self.total = load_total()           # rebuild state from the actor's own store

        @handles("count.add")
        async def add(self, msg: Message) -> int:
            self.total += msg.body["n"]
            await self.cast("audit", "count.changed", {"total": self.total})
            return self.total                   # the reply, when the sender used `call`

**Errors.** A handler refuses a message by raising `ContractError(code, detail)` (a `Code`
of the contracts): a `call` gets `kernel.reply` with `error` {`code`, `detail`}, a cast is
logged, and either way the message is done. Any other exception is a handler failure
(`kernel.fail`, redelivery by the restart policy). The caller of a `call` gets one error
type back, `CallFailed(code, detail)`: the callee's code, or the kernel's own (`timeout`,
`dead_letter`, `sender_not_allowed`, `not_permitted`). The SDK raises the same `CallFailed`
to an app whose request the runtime refused.

**Answers later.** A handler whose answer waits on something that must not hold the
mailbox (the user, a deadline) returns `REPLY_LATER`: the message is done and no reply is
sent; the actor answers later with `Actor.reply(caller, request_id, body)`, which the
supervisor routes like any reply (the first answer to a call stands, and is given again to
a caller that repeats the request's id). What the actor needs to answer after its own
restart (the caller and the request's id) it keeps in its own store first. The capability
gateway answers an app's request this way while the user decides.

**Held deliveries.** A cast's handler whose effect finishes outside the actor later returns
`ACK_LATER` (the transport, for the tool router's envelopes until the AppServer's verdict):
the actor tells the supervisor at once (`kernel.hold`) and acks the delivery when the
effect is done (`Actor.ack(seq)`). Until then it stays in flight, counts against the
window, and goes to the next incarnation after a crash; it is never blamed for a crash nor
made a suspect, and takes no suspect's probe.

Acks are batched: sent when the actor's queue is empty, or every 64 deliveries.
"""

from __future__ import annotations

import contextvars
import logging
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar

import trio
from typing_extensions import TypeVar as DefaultedTypeVar

from contracts import ContractError

from .._door import APP_PREFIX, Door, PayloadError, app_answer, app_body, from_outside
from .._durability import is_disk_full_error
from .._faults import crash_point
from .._ids import DerivedIds, new_id
from ..wire import Channel, ChannelClosed, Frame, pack_body, unpack_body

log = logging.getLogger("lineup.actor")

_ACK_BATCH = 64


# A message's body as its handler reads it: the type its door declares (`Message[Report]`),
# or `Any` for a handler that reads it itself.
Body = DefaultedTypeVar("Body", default=Any)


class Message(NamedTuple, Generic[Body]):
    """One delivered message. A tuple: built for every delivery, and a frozen dataclass
    costs twice as much to build."""

    id: str
    sender: str
    type: str
    body: Body
    seq: int
    attempt: int
    wants_reply: bool = False
    corr: str | None = None


class CallFailed(Exception):
    """A `call` got a definite error back: the callee's `ContractError`, or the kernel's own
    (`timeout`, `dead_letter`, `sender_not_allowed`)."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


class CallTimeout(CallFailed):
    def __init__(self, to: str, type: str, timeout: float) -> None:
        super().__init__("timeout", f"no reply from {to} to {type} within {timeout} s")


Handler = Callable[[Any, Message], Awaitable[Any]]
H = TypeVar("H", bound=Handler)


class ReplyLater:
    """What a handler returns when its call's answer waits on something that must not hold
    the mailbox (the user, a deadline): the message is done, and the actor answers later
    with `Actor.reply`. Whatever the actor needs to answer after a crash (the caller and
    the request's id) it keeps in its own store first."""


REPLY_LATER = ReplyLater()


class AckLater:
    """What a cast's handler returns when the message's effect is finished outside the
    actor later (an envelope the AppServer has yet to take): the message stays in the
    mailbox, in flight, until the actor calls `Actor.ack(msg.seq)`; an incarnation that
    ends before that is given it again. The supervisor is told (`kernel.hold`), so a crash
    while it waits is not blamed on it."""


ACK_LATER = AckLater()


# Kernel notices arrive as ordinary mailbox messages (sender "supervisor"), so an actor
# may handle them; every other `kernel.` type is channel protocol, never a message.
KERNEL_NOTICES = frozenset({"kernel.actor_failed"})


def handles(message_type: str) -> Callable[[H], H]:
    """Mark an async method as the handler of `message_type`."""
    if not message_type or (
        message_type.startswith("kernel.") and message_type not in KERNEL_NOTICES
    ):
        raise ValueError(
            "handled types must be non-empty and outside `kernel.` (except its notices:"
            f" {', '.join(sorted(KERNEL_NOTICES))})"
        )

    def mark(fn: H) -> H:
        fn._lineup_handles = message_type  # type: ignore[attr-defined]
        return fn

    return mark


# What the running handler has emitted so far, for deterministic output ids.
_emitting: contextvars.ContextVar[DerivedIds | None] = contextvars.ContextVar(
    "lineup_emitting", default=None
)


@dataclass(frozen=True)
class ActorStatistics:
    name: str
    pid: int
    handled: int
    failed: int
    queued: int
    pending_calls: int
    uptime_s: float
    extra: dict[str, Any] = field(default_factory=dict)


class Actor:
    """Subclass, add `@handles` methods and optionally `on_start`; the kernel does the rest.

    An actor of the runtime names its `door` (who may send it each type, and the body's
    declared type): every handled type must be declared there, and each body is checked
    against its type before the handler sees it.
    """

    _handlers: ClassVar[dict[str, str]] = {}
    door: ClassVar[Door | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Every base's handlers (an actor may be composed of mixins), the nearest one winning.
        handlers: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                message_type = getattr(value, "_lineup_handles", None)
                if message_type is not None:
                    handlers[message_type] = attr
        cls._handlers = handlers
        if cls.door is not None:
            undeclared = sorted(set(handlers) - cls.door.types())
            if undeclared:
                raise TypeError(f"{cls.__name__} handles {undeclared} without declaring them")

    def __init__(self) -> None:
        self.name = ""
        self.config: dict[str, Any] = {}
        # The runtime's run: the same across this actor's restarts, new when the whole
        # runtime starts again (what is done once per run, not once per incarnation).
        self.boot_id = ""
        # The runtime's durability setting (the mailbox's `synchronous`): an actor with a
        # database of its own uses it too, with the same barrier before anything leaves.
        self.synchronous = "FULL"
        self._channel: Channel | None = None
        self._calls: dict[str, tuple[trio.Event, list[Frame]]] = {}
        self._handled = 0
        self._failed = 0
        self._refused = 0  # messages whose body was not what their type declares
        self._queue: deque[Frame] = deque()
        self._started = time.monotonic()
        self._kernel_session: _Session | None = None
        self.nursery: trio.Nursery

    # -- for subclasses --------------------------------------------------------------

    async def on_start(self) -> None:
        """Rebuild in-memory state from the actor's own store. Runs before any delivery."""

    def statistics_extra(self) -> dict[str, Any]:
        """Actor-specific figures for `lineup debug actors`."""
        return {}

    @property
    def backlog(self) -> int:
        """How many delivered messages wait for their handler behind the running one."""
        return len(self._queue)

    async def before_acks(self) -> None:
        """Runs before the handled messages' acks go to the supervisor: a handler that left
        some of what it emits to be sent after the messages behind it (one sync of its
        file for several) sends it here, so that no message is acked before all it emitted
        has left."""

    async def cast(self, to: str, type: str, body: Any = None, *, id: str | None = None) -> str:
        """Send a durable message and return its id; do not wait for it to be handled."""
        message_id = id or self._next_id()
        frame = {"v": 1, "id": message_id, "to": to, "type": type, "body": pack_body(body)}
        await self._connected().send(frame)
        return message_id

    async def call(
        self,
        to: str,
        type: str,
        body: Any = None,
        *,
        timeout: float,
        id: str | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> Any:
        """Send a durable request and wait up to `timeout` seconds for its reply.

        The request survives the callee's crashes; a request that dies (max_deliver
        failures) is answered with CallFailed("dead_letter"). A timeout does not withdraw
        the request: it will still be handled. Started with `nursery.start`, the call is
        started once its request is sent: calls started one after another are sent in order.
        """
        message_id = id or self._next_id()
        frame = {
            "v": 1,
            "id": message_id,
            "to": to,
            "type": type,
            "body": pack_body(body),
            "call": True,
        }
        return await self._request(message_id, frame, timeout, to, type, task_status=task_status)

    async def call_until_answered(
        self,
        to: str,
        type: str,
        body: Any = None,
        *,
        id: str,
        first_timeout: float = 0.25,
        max_timeout: float = 2.0,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> Any:
        """`call`, asked again with the same id until it is answered: it outlives the
        callee's restarts, and a repeated id is answered with the first reply. The first
        wait is short, since a call sent before the callee is ready is answered late.
        Started with `nursery.start`, it is started once its first request is sent."""
        timeout = first_timeout
        while True:
            try:
                return await self.call(
                    to, type, body, timeout=timeout, id=id, task_status=task_status
                )
            except CallTimeout:
                task_status = trio.TASK_STATUS_IGNORED  # started at the first sending
                timeout = min(timeout * 2, max_timeout)
                log.debug("%s did not answer %s %s yet; asking again", to, type, id)

    async def reply(
        self,
        caller: str,
        request_id: str,
        body: Any = None,
        *,
        error: ContractError | None = None,
    ) -> None:
        """Answer the call `request_id` from `caller` whose handler returned `REPLY_LATER`.
        The supervisor keeps the first answer to a call (and gives it again to a caller
        that asks again with the same id); a later one is dropped."""
        frame: dict[str, Any] = {"type": "kernel.reply", "corr": request_id, "to": caller}
        if error is not None:
            frame["error"] = error.to_dict()
        else:
            frame["body"] = pack_body(body)
        await self._connected().send(frame)

    def ack(self, seq: int) -> None:
        """Acknowledge a delivery whose handler returned `ACK_LATER`: its effect is done.
        Acks go out with the next batch the handler loop sends (at once when it is idle)."""
        session = self._kernel_session
        if session is None:
            return
        session.acks.append(seq)
        if session.idle:
            session.wake.unpark_all()

    async def supervise(self, op: str, *, timeout: float = 90.0, **fields: Any) -> Any:
        """Ask the supervisor to `start` a dynamic child (`spec=` a ChildSpec as a map) or
        to `stop` one (`name=`), and wait until it is running (or has given up) or stopped.

        Only the actor the runtime names as its app supervisor may (the app manager), and
        only for children named `app.*`; anyone else gets CallFailed("not_permitted").
        Both are idempotent: starting a running child answers with its state, stopping an
        absent one succeeds. Not durable: a replayed handler simply asks again.
        """
        nonce = new_id()
        frame = {"type": "kernel.supervise", "corr": nonce, "op": op, **fields}
        return await self._request(nonce, frame, timeout, "supervisor", f"supervise {op}")

    async def _request(
        self,
        key: str,
        frame: Frame,
        timeout: float,
        to: str,
        what: str,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> Any:
        """Send `frame` and wait for the `kernel.reply` whose `corr` is `key`."""
        if timeout <= 0:
            raise ValueError("`timeout` must be positive")
        done = trio.Event()
        slot: list[Frame] = []
        self._calls[key] = (done, slot)
        try:
            await self._connected().send(frame)
            task_status.started()
            with trio.move_on_after(timeout):
                await done.wait()
        finally:
            self._calls.pop(key, None)
        if not slot:
            raise CallTimeout(to, what, timeout)
        reply = slot[0]
        if "error" in reply:
            error = reply["error"]
            raise CallFailed(str(error.get("code")), str(error.get("detail", "")))
        if "body" not in reply:
            return None
        if to.startswith(APP_PREFIX):  # an app's answer is bytes of its own making too
            try:
                return app_answer(reply["body"])
            except PayloadError as exc:
                raise CallFailed(exc.code, f"the app's answer: {exc.detail}") from None
        return unpack_body(reply["body"])

    def statistics(self) -> ActorStatistics:
        return ActorStatistics(
            name=self.name,
            pid=os.getpid(),
            handled=self._handled,
            failed=self._failed,
            queued=len(self._queue),
            pending_calls=len(self._calls),
            uptime_s=round(time.monotonic() - self._started, 3),
            extra={"refused_bodies": self._refused, **self.statistics_extra()},
        )

    # -- kernel plumbing -------------------------------------------------------------

    def _next_id(self) -> str:
        emitting = _emitting.get()
        return emitting.next() if emitting is not None else new_id()

    def _connected(self) -> Channel:
        if self._channel is None:
            raise RuntimeError("the actor is not connected to its supervisor yet")
        return self._channel

    def _unhandled(self, msg: Message) -> tuple[str, Any]:
        """The outcome of a message no handler takes: ('ok', None) for kernel notices an
        actor does not care about, ('error', {code, detail}) for anything else."""
        if msg.type.startswith("kernel."):
            return "ok", None
        log.warning("%s: no handler for %s (message %s)", self.name, msg.type, msg.id)
        return "error", {"code": "unknown_type", "detail": f"no handler for {msg.type}"}


_new_tuple = tuple.__new__


def message_from_frame(
    frame: Frame, checks: dict[str, Callable[[Any], Any]] | None = None
) -> Message:
    """The delivery as a Message, its body decoded and, with `checks` (a door's body check
    per type), validated if it comes from outside the runtime's own actors. Raises on a
    body that is not msgpack or not of its type: called inside the handler loop's guard,
    never where a bad body could end the actor."""
    # Built for every delivery: positionally through tuple.__new__, at half the cost
    # of NamedTuple's keyword constructor. The order is Message's fields'.
    get = frame.get
    kind = frame["type"]
    sender = get("from", "")
    body: Any
    if sender.startswith(APP_PREFIX):  # bytes of its own making (`_body`)
        body = app_body(frame.get("body", b""))
    else:
        body = unpack_body(frame["body"]) if "body" in frame else None
    if checks and from_outside(sender):
        check = checks.get(kind)
        if check is not None:
            body = check(body)
    return _new_tuple(
        Message,
        (
            frame["id"],
            sender,
            kind,
            body,
            frame["seq"],
            get("attempt", 1),
            bool(get("call")),
            get("corr"),
        ),
    )


class _Session:
    """One incarnation of an actor on its channel: a reader task and the handler loop."""

    def __init__(self, actor: Actor, channel: Channel) -> None:
        self.actor = actor
        self.channel = channel
        self.wake = trio.lowlevel.ParkingLot()
        self.idle = False  # the handler loop is parked on `wake`
        self.awaiting_reset = False
        self.full_waits = (0, 0)  # (seq, tries) of the last message to find the disk full
        self.acks: list[int] = []
        # Each handled type's bound method, looked up once per incarnation.
        self.handlers: dict[str, Callable[[Message], Awaitable[Any]]] = {
            message_type: getattr(actor, attr) for message_type, attr in actor._handlers.items()
        }
        door = type(actor).door
        self.checks = door.checks if door is not None else None

    async def read(self, batches: AsyncIterator[list[Frame]], nursery: trio.Nursery) -> None:
        async for batch in batches:
            for frame in batch:
                if "seq" in frame:
                    if not self.awaiting_reset:
                        self.actor._queue.append(frame)
                else:
                    await self.other_frame(frame)
            if self.idle and self.actor._queue:
                self.wake.unpark_all()  # once for what one receive brought
        nursery.cancel_scope.cancel()

    async def other_frame(self, frame: Frame) -> None:
        actor = self.actor
        kind = frame["type"]
        if kind == "kernel.reply":
            waiting = actor._calls.get(frame.get("corr", ""))
            if waiting is not None and not waiting[0].is_set():
                waiting[1].append(frame)
                waiting[0].set()
        elif kind == "kernel.ping":
            # Answered here, in the actor's own loop: a process stopped, or a loop held by
            # a handler that never awaits, misses it.
            self.channel.send_nowait({"type": "kernel.pong", "n": frame.get("n")})
        elif kind == "kernel.reset":
            self.awaiting_reset = False
        elif kind == "kernel.stats_request":
            stats = vars(actor.statistics())
            await self.channel.send(
                {"type": "kernel.stats", "nonce": frame.get("nonce"), "stats": stats}
            )

    def handled(self, seq: int, value: Any) -> int:
        """A delivery's handler returned: its ack waits for the next batch, or it is held
        (`ACK_LATER`), which the supervisor is told at once (from then a crash is not its
        fault). The number of acks waiting."""
        if value is ACK_LATER:
            self.channel.send_nowait({"type": "kernel.hold", "seqs": [seq]})
        else:
            self.acks.append(seq)
        return len(self.acks)

    async def flush_acks(self) -> None:
        await self.actor.before_acks()
        if self.acks:
            acks, self.acks = self.acks, []
            await self.channel.send({"type": "kernel.ack", "seqs": acks})

    async def handle_forever(self) -> None:
        actor = self.actor
        while True:
            if not actor._queue:
                await self.flush_acks()  # group acks: flush when there is nothing to do
                if actor._queue:
                    continue
                self.idle = True
                try:
                    await self.wake.park()
                finally:
                    self.idle = False
                continue
            frame = actor._queue.popleft()
            crash_point("actor.after_receive")
            try:  # not a coroutine of its own: this runs for every message
                msg = message_from_frame(frame, self.checks)
            except Exception as exc:  # a body that is not msgpack, or not of its type
                await self.refused(frame, exc)
                continue
            handler = self.handlers.get(msg.type)
            # Inline rather than a method: a coroutine fewer for every message handled.
            token = _emitting.set(DerivedIds(msg.id))
            try:
                if handler is None:
                    outcome, value = actor._unhandled(msg)
                else:
                    outcome, value = "ok", await handler(msg)
            except ContractError as exc:
                outcome, value = "error", exc.to_dict()
            except Exception as exc:
                _emitting.reset(token)
                await self.failed(msg, exc, frame)
                continue
            _emitting.reset(token)
            if msg.wants_reply and value is not REPLY_LATER and value is not ACK_LATER:
                reply: Frame = {"type": "kernel.reply", "corr": msg.id, "to": msg.sender}
                if outcome == "ok":
                    reply["body"] = pack_body(value)
                else:
                    reply["error"] = value
                await self.channel.send(reply)
            elif outcome == "error":
                log.warning("%s: %s from %s: %s", actor.name, msg.type, msg.sender, value)
            crash_point("actor.after_emit")
            actor._handled += 1
            if self.handled(msg.seq, value) >= _ACK_BATCH:
                await self.flush_acks()

    async def refused(self, frame: Frame, exc: Exception) -> None:
        """A body its handler must not see: answered `invalid_payload` (naming the field)
        when it was a call, and done either way: redelivering it would change nothing."""
        actor = self.actor
        actor._refused += 1
        if isinstance(exc, PayloadError):
            code, detail = exc.code, exc.detail
        else:
            code, detail = "invalid_payload", "the body is not msgpack"
        log.warning(
            "%s: refused %s %s from %s: %s",
            actor.name,
            frame.get("type"),
            frame.get("id"),
            frame.get("from"),
            detail,
        )
        if frame.get("call"):
            await self.channel.send(
                {
                    "type": "kernel.reply",
                    "corr": frame["id"],
                    "to": frame.get("from"),
                    "error": {"code": code, "detail": detail[:1000]},
                }
            )
        self.acks.append(frame["seq"])

    async def disk_full(self, msg: Message, frame: Frame) -> None:
        """A handler that failed for want of space on the disk: not the message's fault,
        so no failure that would count towards its dead letter. The message goes back to
        the front of the queue and is handled again, in order, after a backoff."""
        seq, tries = self.full_waits
        tries = tries + 1 if seq == msg.seq else 1
        self.full_waits = (msg.seq, tries)
        if tries == 1:
            log.warning("%s: no space left to handle %s; trying again", self.actor.name, msg.type)
        self.actor._queue.appendleft(frame)
        await self.flush_acks()
        await trio.sleep(min(0.05 * 2**tries, 1.0))

    async def failed(self, msg: Message, exc: Exception, frame: Frame) -> None:
        """Report a failed handler, drop what is queued behind it, and wait for the reset
        after which the supervisor redelivers everything from `msg` on, in order; one that
        failed for want of space is tried again instead (`disk_full`)."""
        if is_disk_full_error(exc):
            await self.disk_full(msg, frame)
            return
        log.exception("%s: handler for %s failed", self.actor.name, msg.type)
        self.actor._failed += 1
        self.actor._queue.clear()
        self.awaiting_reset = True
        await self.flush_acks()
        error = f"{exc.__class__.__name__}: {exc}"
        await self.channel.send({"type": "kernel.fail", "seq": msg.seq, "error": error})


async def _after(
    rest: list[Frame], batches: AsyncIterator[list[Frame]]
) -> AsyncIterator[list[Frame]]:
    """What came with the welcome, then every later receive."""
    if rest:
        yield rest
    async for batch in batches:
        yield batch


async def serve(actor: Actor, channel: Channel) -> None:
    """Run `actor` on `channel` until the channel closes (the supervisor went away)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(channel.run_writer)
        await channel.send({"type": "kernel.hello", "pid": os.getpid()})
        batches = channel.batches()
        first = await anext(batches)
        welcome = first[0]
        if welcome.get("type") != "kernel.welcome":
            raise ChannelClosed(f"expected kernel.welcome, got {welcome.get('type')!r}")
        actor.name = welcome["name"]
        actor.config = welcome.get("config") or {}
        actor.boot_id = str(welcome.get("boot") or "")
        actor.synchronous = str(welcome.get("synchronous") or "FULL")
        actor._channel = channel
        actor.nursery = nursery
        session = _Session(actor, channel)
        actor._kernel_session = session
        nursery.start_soon(session.read, _after(first[1:], batches), nursery)
        await actor.on_start()
        await channel.send({"type": "kernel.ready"})
        await session.handle_forever()
