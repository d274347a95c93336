"""The tool router's steps: what one message (or one of its own timers) changes, applied
once, in one transaction of `tool_router.db`, and what it emits, sent after the commit.

    handled message M ─▶ applied already? ── yes ─▶ send again what M's step emitted
           │ no                                     (the same ids: the mailbox keeps each once)
           ▼
    the handler runs: its writes go into one transaction, its casts are held
           ▼
    COMMIT (the effect, "M applied", and what the step emits)
           ▼
    the casts for the app and the store's audit, in order
           ▼
    (at synchronous=NORMAL, the WAL synced if the step tells the agent anything)
           ▼
    one `transport.submit` with the step's envelopes for the agent, then the call's steps
    for the chat's timeline

While more messages wait behind a message's step, its envelopes for the agent (and its
steps of calls for the chat) may wait for theirs (at most `UNSYNCED_MAX`): one sync of the
WAL then covers them all, they leave as one submit, a call's step for the chat that a later
one of the same call supersedes is not sent (`merge_held`), and all of it leaves before
the messages are acked (`flush_unsynced`, from the kernel's `before_acks`).

A crash after the commit and before the casts left loses nothing: M was not acked, so it
is delivered again, found applied, and what its step emitted is sent again. A step of the
router's own (a deadline reached, an app activated, the policy re-read) has no message to
be given again: what it emitted is sent again when the tool router starts.

What a step emitted is kept only while its cause may come again (`tool_steps`): the first
delivery of an incarnation is the lowest seq its mailbox still holds, so every step caused
by a lower seq is done for good; and a step older than `KEEP_MS` in a running incarnation
was acked long ago (the ack follows its casts on the same channel, and the tool router
lives only while the supervisor does).

Steps run one at a time (a lock), each in its own task's context: a task a step starts
(an activation, a refocus) opens its own step.
"""

from __future__ import annotations

import contextvars
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgpack
import trio

from actors.kernel import Message, crash_point, derive_id, new_id
from contracts import Code, ContractError, fsync_directory

from ._db import CALL_COLUMNS, DEADLINE_COLUMNS, INVENTORY_COLUMNS, replace, sync_wal

log = logging.getLogger("lineup.tool_router")

# What a step emitted is kept this long in a running incarnation: its cause comes again
# only to a later incarnation, in its first seconds, and an incarnation prunes nothing
# before it has run this long.
KEEP_MS: Final = 120_000
PRUNE_EVERY_S: Final = 60.0
# A finished call's row (and its deadline operation's) is kept a week after its last
# change, and only among the newest `FINISHED_KEPT` finished: `lineup tools calls` shows
# it, and a call retried with its id meanwhile gets the same outcome (the AppServer hands
# a run again only until the runtime's cursor passes it); then it goes.
FINISHED_KEPT_MS: Final = 7 * 24 * 3600 * 1000
FINISHED_KEPT: Final = 500
SUBMIT: Final = "transport.submit"
TRANSPORT: Final = "transport"
UNSYNCED_MAX: Final = 32  # steps' outputs waiting for one shared sync
SHOWN: Final = "app.tool.event"  # a call's step for the chat's timeline
SHOWN_MANY: Final = "app.tool.events"  # several, in one message
PASSING: Final = frozenset({"accepted", "starting", "running"})  # what a later step supersedes
MERGED_MAX_BYTES: Final = 256 * 1024  # the envelopes' text one merged submit carries

# A cast: [to, type, id, body].
Output = list[Any]


@dataclass
class Step:
    cause: str  # the sender/id of the message applied, or own/<fresh id> for a timer's
    seq: int | None
    task: trio.lowlevel.Task
    begun: bool = False  # a transaction is open
    submits: list[dict[str, Any]] = field(default_factory=list)  # envelopes for the agent
    casts: list[Output] = field(default_factory=list)
    open: bool = True


_current: contextvars.ContextVar[Step | None] = contextvars.ContextVar(
    "tool_router_step", default=None
)

Send = Callable[[str, str, Any, str], Awaitable[Any]]


class Steps:
    """The tool router's steps on its database (`_db`)."""

    def __init__(
        self,
        db: sqlite3.Connection,
        data_dir: Path,
        *,
        synchronous: str,
        send: Send,
        abandoned: Callable[[], None],
        stepped: Callable[[], None],
        waiting: Callable[[], int] = lambda: 0,
    ) -> None:
        self.db = db
        self.abandoned = abandoned  # what is in memory is read again from the file
        self.stepped = stepped  # told as each step ends: it may have moved a deadline
        self.data_dir = data_dir
        # At NORMAL a commit is not synced: before the agent hears of a step, its WAL is.
        self.barrier = synchronous == "NORMAL"
        self.send = send
        self.waiting = waiting  # how many messages wait behind the running one
        self.lock = trio.Lock()
        # What committed steps emitted for the agent and the chat, waiting for the WAL's
        # sync; sent in order under `send_lock`, so a step's own sending cannot overtake them.
        self.unsynced: list[Output] = []
        self.send_lock = trio.Lock()
        self.first_seq: int | None = None  # of this incarnation's first delivery
        self.started_ms = _now_ms()
        self.pruned_at = time.monotonic()
        self.wal_named = False
        self.counts = {"steps": 0, "replayed": 0, "synced": 0}

    def current(self) -> Step | None:
        """The open step of the running task, if it has one."""
        step = _current.get()
        if step is None or not step.open or step.task is not trio.lowlevel.current_task():
            return None
        return step

    # -- a message's step -------------------------------------------------------------

    async def handle(self, msg: Message, run: Callable[[], Awaitable[Any]]) -> Any:
        """Apply `msg` once: `run` (the handler) inside a step; a message applied already
        sends again what its step emitted and gives the answer it gave."""
        cause = f"{msg.sender}/{msg.id}"
        async with self._locked():
            if self.first_seq is None:
                self.first_seq = msg.seq
                self._forget_done(msg.seq)
            # A first delivery cannot have been applied: the mailbox raises its attempts
            # durably before it hands it out, so only a message given again is looked up.
            recorded = None
            if msg.attempt > 1:
                recorded = self.db.execute(
                    "SELECT s.outputs, s.reply FROM lineup_applied a"
                    " LEFT JOIN tool_steps s ON s.cause = a.id WHERE a.id = ?",
                    (cause,),
                ).fetchone()
            if recorded is not None:
                self.counts["replayed"] += 1
                await self._send_all(_unpack(recorded[0]) or [], deferrable=True)
                answer = _unpack(recorded[1]) or {}
                if "error" in answer:
                    raise ContractError(Code(answer["error"]["code"]), answer["error"]["detail"])
                return answer.get("body")
            step = Step(cause, msg.seq, trio.lowlevel.current_task())
            token = _current.set(step)
            try:
                reply = await run()
            except ContractError as exc:  # a definite refusal: what was done before it stands
                error = {"error": exc.to_dict()} if msg.wants_reply else None
                await self._finish(step, error, deferrable=True)
                raise
            except BaseException:
                self._abandon(step)
                raise
            finally:
                _current.reset(token)
                self.stepped()
            await self._finish(step, {"body": reply} if msg.wants_reply else None, deferrable=True)
            return reply

    # -- a step of the router's own -------------------------------------------------------

    @asynccontextmanager
    async def own(self) -> AsyncIterator[Step]:
        """A step with no message behind it (a timer's, an activation's): joined if the
        running task is in one already."""
        joined = self.current()
        if joined is not None:
            yield joined
            return
        async with self._locked():
            step = Step(f"own/{new_id()}", None, trio.lowlevel.current_task())
            token = _current.set(step)
            try:
                yield step
            except BaseException:
                self._abandon(step)
                raise
            finally:
                _current.reset(token)
                self.stepped()
            await self._finish(step, None)

    async def resend_own(self) -> None:
        """At start: what the router's own steps emitted, again (each step caused by a
        message is sent again when that message comes again)."""
        async with self.lock:
            rows = self.db.execute(
                "SELECT outputs FROM tool_steps WHERE seq IS NULL ORDER BY at_ms, rowid"
            ).fetchall()
            for (outputs,) in rows:
                await self._send_all(_unpack(outputs) or [])

    @asynccontextmanager
    async def _locked(self) -> AsyncIterator[None]:
        """The steps' lock, taken without a trip through the scheduler when it is free: a
        flood of messages that change nothing (an app's reports on calls that are not its)
        costs the router a checkpoint less each."""
        try:
            self.lock.acquire_nowait()
        except trio.WouldBlock:
            await self.lock.acquire()
        try:
            yield
        finally:
            self.lock.release()

    # -- inside a step --------------------------------------------------------------------

    def write(self, body: dict[str, Any]) -> None:
        """Rows of the running step, replaced whole: `calls`, `deadlines`, `inventories`,
        `revision` (the highest issued; never lowered); `outbox` (envelopes for the agent,
        {key, envelope, conversation_id}) and `audit` ({code, detail, message_id}), sent
        once the step is committed."""
        step = self._require()
        self.begin(step)
        db = self.db
        replace(db, "tool_calls", CALL_COLUMNS, body.get("calls", ()))
        replace(db, "tool_deadlines", DEADLINE_COLUMNS, body.get("deadlines", ()))
        replace(db, "tool_inventories", INVENTORY_COLUMNS, body.get("inventories", ()))
        revision = body.get("revision")
        if revision is not None:
            db.execute(
                "INSERT INTO tool_state (name, value) VALUES ('revision', ?)"
                " ON CONFLICT(name) DO UPDATE SET value = max(value, excluded.value)",
                (int(revision),),
            )
        step.submits.extend(body.get("outbox", ()))
        for entry in body.get("audit", ()):
            audit = {
                "code": str(entry["code"]),
                "detail": str(entry.get("detail", ""))[:500],
                "message_id": entry.get("message_id"),
            }
            step.casts.append(["store", "store.audit", new_id(), audit])

    def hold(self, to: str, type_: str, body: Any, message_id: str) -> bool:
        """Hold a cast of the running task's step until it commits; False outside a step."""
        step = self.current()
        if step is None:
            return False
        step.casts.append([to, type_, message_id, body])
        return True

    def begin(self, step: Step) -> None:
        if not step.begun:
            self.db.execute("BEGIN IMMEDIATE")
            step.begun = True

    def _require(self) -> Step:
        step = self.current()
        if step is None:
            raise RuntimeError("the tool router writes only inside a step")
        return step

    # -- the end of a step ----------------------------------------------------------------

    async def _finish(
        self, step: Step, reply: dict[str, Any] | None, *, deferrable: bool = False
    ) -> None:
        step.open = False
        outputs: list[Output] = []
        if step.submits:
            outputs.append([TRANSPORT, SUBMIT, new_id(), {"items": step.submits}])
        outputs.extend(step.casts)
        if not step.begun and not outputs and reply is None:
            return  # nothing changed, nothing to say: nothing to record
        self.begin(step)
        try:
            self.db.execute(
                "INSERT INTO tool_steps (cause, seq, at_ms, outputs, reply) VALUES (?, ?, ?, ?, ?)",
                (step.cause, step.seq, _now_ms(), _pack(outputs), _pack(reply)),
            )
            if step.seq is not None:
                self.db.execute("INSERT INTO lineup_applied (id) VALUES (?)", (step.cause,))
            self._prune()
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            self.abandoned()
            raise
        self.counts["steps"] += 1
        await self._send_all(outputs, deferrable=deferrable)

    def _abandon(self, step: Step) -> None:
        step.open = False
        if step.begun:
            self.db.execute("ROLLBACK")
        self.abandoned()

    async def _send_all(self, outputs: list[Output], *, deferrable: bool = False) -> None:
        """Send what a committed step emitted; at NORMAL, what is for the agent (it leaves
        the device) only once the WAL is synced. The app's and the store's go first (the
        app starts on a call while the WAL is synced), then the transport's, then the
        chat's (no call waits for its timeline), each recipient's in the order emitted. A
        message's step (`deferrable`) leaves the transport's and the chat's to wait for
        the next sync while messages wait behind it."""
        barrier = self.barrier and (
            bool(self.unsynced) or any(output[1] == SUBMIT for output in outputs)
        )
        if not barrier:
            for to, type_, message_id, body in outputs:
                await self.send(to, type_, body, message_id)
            return
        defer = deferrable and self.waiting() > 0 and len(self.unsynced) < UNSYNCED_MAX
        for output in outputs:
            to, type_, message_id, body = output
            if to == TRANSPORT or type_ == SHOWN:
                self.unsynced.append(output)  # behind what waits already, in order
            else:
                await self.send(to, type_, body, message_id)
        if defer:
            crash_point("tool_router.unsynced")
            return
        await self.flush_unsynced()

    async def flush_unsynced(self) -> None:
        """Sync the WAL once and send what waited for it, merged (`merge_held`): the
        transport's first, then the chat's, each in the order emitted."""
        async with self.send_lock:
            if not self.unsynced:
                return
            outputs, self.unsynced = merge_held(self.unsynced), []
            self._sync()
            for to, type_, message_id, body in outputs:
                await self.send(to, type_, body, message_id)

    def _sync(self) -> None:
        sync_wal(self.data_dir)
        if not self.wal_named:
            fsync_directory(self.data_dir)
            self.wal_named = True
        self.counts["synced"] += 1

    def _forget_done(self, first_seq: int) -> None:
        """Every message below this incarnation's first delivery is done: what their steps
        emitted will not be needed again."""
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute(
            "DELETE FROM lineup_applied WHERE id IN (SELECT cause FROM tool_steps WHERE seq < ?)",
            (first_seq,),
        )
        self.db.execute("DELETE FROM tool_steps WHERE seq < ?", (first_seq,))
        self.db.execute("COMMIT")

    def _prune(self) -> None:
        """Inside a step's transaction, about once a minute: steps older than `KEEP_MS`,
        once this incarnation has run that long, and calls finished `FINISHED_KEPT_MS` ago
        or past the newest `FINISHED_KEPT` finished."""
        now = time.monotonic()
        if now - self.pruned_at < PRUNE_EVERY_S:
            return
        self.pruned_at = now
        before = _now_ms() - KEEP_MS
        if self.started_ms > before:
            return
        self.db.execute(
            "DELETE FROM lineup_applied WHERE id IN (SELECT cause FROM tool_steps WHERE at_ms < ?)",
            (before,),
        )
        self.db.execute("DELETE FROM tool_steps WHERE at_ms < ?", (before,))
        finished_before = _now_ms() - FINISHED_KEPT_MS
        kept_from = self.db.execute(
            "SELECT updated_ms FROM tool_calls WHERE state IN ('succeeded', 'failed')"
            " ORDER BY updated_ms DESC LIMIT 1 OFFSET ?",
            (FINISHED_KEPT - 1,),
        ).fetchone()
        if kept_from is not None:
            finished_before = max(finished_before, int(kept_from[0]))
        gone = " FROM tool_calls WHERE state IN ('succeeded', 'failed') AND updated_ms < ?"
        self.db.execute(
            f"DELETE FROM tool_deadlines WHERE call_id IN (SELECT call_id{gone})",
            (finished_before,),
        )
        self.db.execute(f"DELETE{gone}", (finished_before,))


def merge_held(outputs: list[Output]) -> list[Output]:
    """What waited, as it is sent: the transport's first, its consecutive submits as one
    carrying their envelopes in order (up to `MERGED_MAX_BYTES` of text); then the chat's
    steps as one `app.tool.events`, a call's passing step dropped when a later one of the
    same call follows; each merged message under an id of its parts (`merged_id`).

    Safe under a replay: a step whose cause comes again sends its own outputs again; the
    transport and the AppServer take an envelope once by its key, the chat a step once by
    its id, and the chat keeps a call's final step over a passing one."""
    merged: list[Output] = []
    parts: list[list[str]] = []  # the ids each merged message stands for
    size = 0  # of the last one's envelopes
    for to, type_, message_id, body in (o for o in outputs if o[0] == TRANSPORT):
        items = list(body["items"]) if type_ == SUBMIT else []
        weight = sum(len(item["envelope"]) for item in items)
        last = merged[-1] if merged else None
        if last and last[1] == SUBMIT == type_ and size + weight <= MERGED_MAX_BYTES:
            last[3] = {"items": [*last[3]["items"], *items]}
            parts[-1].append(message_id)
            size += weight
            continue
        merged.append([to, type_, message_id, body])
        parts.append([message_id])
        size = weight
    for output, ids in zip(merged, parts, strict=True):
        output[2] = merged_id(ids)
    return merged + _merge_shown([o for o in outputs if o[0] != TRANSPORT])


def merged_id(ids: list[str]) -> str:
    """A message standing for the messages `ids`, in order: one of them alone keeps its
    id; several, an id of their own derived from them all, so that the same parts always
    make the same id and other parts (a replay merges what came again differently) never
    do, and the mailbox drops none of them for a duplicate."""
    return ids[0] if len(ids) == 1 else derive_id("\n".join(ids), 0)


def _merge_shown(outputs: list[Output]) -> list[Output]:
    """The chat's steps, as one message when there are several; a call's passing step goes
    only if nothing later of the same call follows."""
    last = {str(o[3].get("call_id")): n for n, o in enumerate(outputs)}
    kept = [
        o
        for n, o in enumerate(outputs)
        if o[3].get("state") not in PASSING or last[str(o[3].get("call_id"))] == n
    ]
    if len(kept) < 2:
        return kept
    steps = [{"id": message_id, "step": body} for _, _, message_id, body in kept]
    ids = [step["id"] for step in steps]
    return [[kept[0][0], SHOWN_MANY, merged_id(ids), {"steps": steps}]]


def _now_ms() -> int:
    return int(time.time() * 1000)


def _pack(value: Any) -> bytes | None:
    return None if value is None else msgpack.packb(value, use_bin_type=True)


def _unpack(blob: bytes | None) -> Any:
    return None if blob is None else msgpack.unpackb(blob, raw=False)
