"""The supervisor: starts actors as processes, restarts them by OTP rules, stops them in order.

Each child has a keeper task that runs one incarnation after another: spawn, read its
channel into the switchboard until EOF or until its process has exited (then what it
started is killed, and what is left in the channel is read for at most `EXIT_GRACE`
seconds: a process it left holding the channel cannot keep the incarnation alive), reap,
tell the switchboard (which requeues what was in flight and blames the message being
handled), then decide by the child's `restart` policy, the restart intensity and the
strategy whether and when to start it again.

**Restarts.** Restart intensity is `max_restarts` within `max_seconds`, with exponential
backoff (`backoff_base` * 2ⁿ, capped at `backoff_max`; the first restart in a period is
immediate). Past the intensity the child is marked `failed`, the runtime `degraded`, and
every other child receives `kernel.actor_failed`. A crash blamed on a message does not
count toward the intensity: it is bounded by `max_deliver` instead, so a poison message
alone cannot exhaust it. Children start in order, each after the previous one is ready (or
has failed: a child not ready within `ready_timeout`, 60 s, is killed and counts as a
crash), and stop in reverse order. The runtime is `running` again once no child is
`failed` (a failed child removed or started anew). Dynamic children (the app processes) are
started and stopped by name at run time (`Supervisor.start_child` / `stop_child`; the
control requests `start_child` / `stop_child`; an actor's `kernel.supervise`,
`_delegation`).

**Liveness.** The heartbeat ticks every `RuntimeConfig.heartbeat_interval` seconds (5 s; 0
turns it off), at whole multiples of the interval on the supervisor's clock, the same ticks
for every child. At a tick the supervisor sends `kernel.ping` to each running child that
said nothing in the last half interval (any frame from a child shows it alive, so a busy
one is never pinged) and whose loop it does not see waiting for work (`_waiting`); the
actor's channel reader answers `kernel.pong` from the actor's own trio loop. So a process
stopped (SIGSTOP) or a loop held by a handler that never awaits (CPU-bound, a blocking
call) falls silent, while a handler that awaits does not. A child silent for
`unresponsive_after` seconds (15 s) is shown `unresponsive` in `lineup debug actors`, and
`lineup debug status` says `degraded` with the reason naming it, until it answers again.
With `restart_unresponsive` (off by default) the supervisor is its watchdog: it SIGKILLs
the child, which restarts by its policy like after any crash (the reason says the watchdog
killed it; a message it was handling is blamed, as for any crash). A child seen waiting for
work is looked at again only at every third tick (the whole intervals in
`unresponsive_after`), which finds one stuck meanwhile as soon: an idle runtime's heartbeat
wakes the supervisor once in 15 s and no child; the ping is one small frame
on the channel's ordinary writer, and nothing is added to the path of a message.

**Lifecycle record.** The supervisor keeps the last 1000 lifecycle events of its children
(`ready`, `exit` with the reason, `restart` with the delay and reason, `failed`,
`unresponsive`, `responsive`): the control request `lifecycle`; each one is also sent to
every live trace (`lineup debug trace`) and logged.

**An isolated app's end.** The end of an incarnation is the exit of its process (the
launcher's, waited on with a pidfd, or the relay's, as the app zygote reports it), not the
EOF of its channel, which a process the app handed its channel to could put off for ever.
At that exit the supervisor kills everything still in the app's cgroup, reads what the
channel still holds for at most a second, and closes it; then it empties the cgroup
(SIGKILL until `cgroup.procs` is empty) and removes it (`_containment`). `stop_child`,
disable and remove take that path after SIGTERM (and SIGKILL after the spec's `shutdown`),
and a SIGKILL of an app (`lineup debug kill`, or the end of its `shutdown`) goes to
everything in its cgroup at once. An app killed for its memory limit ends with the reason
`killed by SIGKILL (out of memory (the limit of its cgroup))`.

**A start that fails.** An app's first process started for an actor that waits on it
(`kernel.supervise` start: the app manager's launch) that ends before it is ready (the
launcher or the child exits before `kernel.hello`, or `on_start` fails) failed to start: it
is not restarted, since it would only fail again until the restart intensity gave up. The
incarnation ends with the reason `did not start (exited with status N): ` and the last
lines of what it wrote to its log (`lineup debug actors`, `last_exit`); the start is
answered at once with the state `stopped`, and the app manager fails the launch with
`app_start_failed` (`actors/app_manager/_start_failure.py`). The next launch tries again. A
process that was ready once is restarted by its policy.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import time
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio

from .._door import load_door
from .._ids import new_id
from .._specs import ChildSpec, Restart, RuntimeConfig
from ..spawning import (
    AppZygote,
    CgroupLimits,
    ChildProcess,
    Incarnation,
    JailPlan,
    PreforkedZygote,
    Zygote,
    describe_exit,
    log_jail_report,
    merge_report,
    plan_jail,
    prepare_cgroup,
    runtime_id,
    zygote_preload,
)
from ..wire import Channel, Frame, FrameError, pack_body
from ._children import Child, RestartHistory, lock_data_dir
from ._control import serve_control
from ._delegation import supervise_for
from ._gate import Doors, Gate, Refusal
from ._log_bound import bound_logs
from ._mailbox import MailboxStore, PruneStep, disk_full
from ._preflight import check_data_dir, check_databases
from ._switchboard import Op, Switchboard, TraceRecord
from ._ui_socket import serve_ui
from ._waiting import waits_for_work
from ._wire import ProtocolViolation, check_supervise, classify

# Frames a child sends to the supervisor itself, not through the mailboxes.
_SUPERVISOR_KINDS = frozenset({"kernel.ready", "kernel.supervise", "kernel.stats", "kernel.pong"})

log = logging.getLogger("lineup.supervisor")

# Lifecycle events the supervisor keeps for `debug trace` and `debug why` (the oldest go).
LIFECYCLE_KEPT = 1000
# How long the mailbox takes no batch before its WAL is cut back to nothing.
WAL_IDLE_S = 30.0
ACKS_HELD_S = 0.5  # acks a batch held are written at the latest this much later
CAP_WARNING_EVERY_S = 3600.0

# Seconds the channel of an exited process is still read, for the frames it sent before
# it exited; EOF normally ends it at once.
EXIT_GRACE = 1.0


def _span(seconds: float) -> str:
    """A duration in a person's words: "40 seconds", "12 minutes", "3 hours"."""
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= 2 * size:
            return f"{round(seconds / size)} {unit}s"
    return f"{round(seconds)} seconds"


class Supervisor:
    def __init__(
        self,
        config: RuntimeConfig,
        data_dir: str | Path,
        *,
        zygote: PreforkedZygote | None = None,
    ) -> None:
        """`zygote`: the one `prefork_zygote` forked before trio ran, if it did."""
        self.config = config
        self.data_dir = Path(data_dir)
        self.state = "created"
        self.children: dict[str, Child] = {}
        self.started_wall = time.time()
        # Tells actors a new run of the runtime from a restart of their own (`Actor.boot_id`).
        self.boot_id = new_id()
        self._started = time.monotonic()
        self._cap_warned_at = -math.inf  # when the size cap's warning was last logged
        self._stop_requested = trio.Event()
        self._nursery: trio.Nursery | None = None
        self.store: MailboxStore | None = None
        self.inspector: MailboxStore | None = None  # read-only, for the control socket
        self.switchboard: Switchboard | None = None
        self.child_env: dict[str, str] | None = None  # None: children inherit ours
        self.zygote: Zygote | None = None
        self._preforked = zygote
        self._zygote_lock = trio.Lock()
        self.app_zygote: AppZygote | None = None  # started on the first app's launch
        self._app_zygote_lock = trio.Lock()
        # Who may send what to whom (each child's door), and each sender's gate, which
        # keeps its refusal counts across its restarts.
        self.doors = Doors(load_door(config.app_door))
        for spec in config.children:  # known before they start: early messages wait for them
            self.doors.set(spec.name, load_door(spec.door))
        self.gates: dict[str, Gate] = {}
        # Its own record of what happened to its children: exits, restarts, failures,
        # heartbeats missed and answered again (each also a trace record, and logged).
        self.lifecycle: deque[dict[str, Any]] = deque(maxlen=LIFECYCLE_KEPT)

    @property
    def uptime_s(self) -> float:
        return time.monotonic() - self._started

    @property
    def degraded(self) -> list[str]:
        return [name for name, child in self.children.items() if child.state == "failed"]

    def unresponsive(self) -> dict[str, float]:
        """Running children their heartbeat found silent past `unresponsive_after`: name ->
        seconds silent."""
        return {
            name: round(child.silent_s(), 3)
            for name, child in self.children.items()
            if child.unresponsive and child.state == "running"
        }

    def record(self, name: str, event: str, detail: str = "") -> None:
        """A lifecycle event of child `name`: kept, and shown to every live trace."""
        at = time.time()
        self.lifecycle.append({"at": at, "actor": name, "event": event, "detail": detail})
        if self.switchboard is not None and self.switchboard.tracers:
            trace = TraceRecord(at, "supervisor", name, "lifecycle", "", event, detail)
            for tracer in list(self.switchboard.tracers):
                tracer(trace)

    def request_stop(self) -> None:
        self._stop_requested.set()

    # -- running -------------------------------------------------------------------------

    def _dedup_horizon_ms(self) -> int:
        """Done messages older than this (epoch ms) are past the dedup window."""
        return int((time.time() - self.config.dedup_window_s) * 1000)

    def _warn_if_capped(self, step: PruneStep) -> None:
        """The size cap took done messages still inside the dedup window: say how long
        the window is now, and what the user can do (at most once every
        `CAP_WARNING_EVERY_S`: a busy runtime hits its cap at every prune)."""
        now = time.monotonic()
        if step.newest_forced_ms is None or now < self._cap_warned_at + CAP_WARNING_EVERY_S:
            return
        self._cap_warned_at = now
        kept_s = max(0.0, time.time() - step.newest_forced_ms / 1000)
        log.warning(
            "the mailbox keeps at most %d done messages: its dedup window is %s now, not %s"
            " (a replayed message older than that could be applied twice); raise"
            " `dedup_max_rows` if the data dir's disk has room",
            self.config.dedup_max_rows,
            _span(kept_s),
            _span(self.config.dedup_window_s),
        )

    async def _prune_now_and_then(self, switchboard: Switchboard) -> None:
        """A runtime that runs for weeks keeps only a dedup window of done messages, and
        at most `dedup_max_rows` of them: they are pruned at start, then once a quarter of
        the cap more frames came through, and at least every `prune_every_s`, a chunk at a
        time in the switchboard's own transactions, so that messages go on between two
        chunks. The logs are bounded at the same moments. An idle runtime is woken once
        every `prune_every_s`."""
        cap = self.config.dedup_max_rows
        while True:
            switchboard.prune_after_frames = switchboard.frames + max(1, cap // 4)
            switchboard.prune_due = trio.Event()
            with trio.move_on_after(self.config.prune_every_s):
                await switchboard.prune_due.wait()
            horizon = self._dedup_horizon_ms()
            pruned, after, newest_forced = 0, 0, None
            while after is not None:
                step = await switchboard.request("prune", "", (horizon, cap, after))
                pruned, after = pruned + step.pruned, step.after
                if step.newest_forced_ms is not None:
                    newest_forced = max(newest_forced or 0, step.newest_forced_ms)
            self._warn_if_capped(PruneStep(pruned, None, newest_forced))
            freed = await trio.to_thread.run_sync(bound_logs, self.data_dir / "logs")
            log.info("%d old done messages pruned, %d bytes of logs turned over", pruned, freed)

    def _open_mailbox(self) -> MailboxStore:
        """The mailbox, with nothing in flight and what is past its bounds pruned."""
        store = MailboxStore(self.data_dir / "mailbox.db", synchronous=self.config.synchronous)
        store.begin()
        recovered = store.recover()
        pruned = store.prune_all(
            done_before_ms=self._dedup_horizon_ms(),
            **store.cap_bounds(self.config.dedup_max_rows),
        )
        store.commit()
        self._warn_if_capped(pruned)
        log.info(
            "mailbox open: %d in flight handed back, %d old done pruned", recovered, pruned.pruned
        )
        return store

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        check_data_dir(self.data_dir)
        lock = lock_data_dir(self.data_dir)
        try:  # under the lock: no other runtime has the databases open
            check_databases(self.data_dir)
        except BaseException:
            lock.close()
            raise
        await self._room_to_start()
        self.store = self._open_mailbox()
        self.switchboard = Switchboard(
            self.store, batch_max=self.config.batch_max, queue_size=self.config.inbound_queue
        )
        self.inspector = MailboxStore(self.data_dir / "mailbox.db", readonly=True)
        checkpointer = MailboxStore(
            self.data_dir / "mailbox.db", synchronous=self.config.synchronous
        )
        self.state = "starting"
        if not self.config.door_checks:
            log.warning("the door is OFF: every sender may send anything (a benchmark's setting)")
        try:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    nursery.start_soon(self.switchboard.run)
                    nursery.start_soon(self.switchboard.run_checkpoints, checkpointer)
                    nursery.start_soon(self._prune_now_and_then, self.switchboard)
                    nursery.start_soon(self.switchboard.truncate_wal_when_idle, WAL_IDLE_S)
                    nursery.start_soon(self.switchboard.write_held_acks, ACKS_HELD_S)
                    nursery.start_soon(self._stop_on_signal, signals)
                    # Two doors: the operator's (control.sock) and the user's side's
                    # (ui.sock), which reaches only the host and can stop nothing.
                    await nursery.start(serve_control, self)
                    await nursery.start(serve_ui, self)
                    if self.config.spawn == "fork":
                        forked, self._preforked = self._preforked, None
                        self.zygote = Zygote(zygote_preload(self.config), forked=forked)
                        await nursery.start(self.zygote.run)
                    for spec in self.config.children:
                        await self.start_child(spec, dynamic=False)
                    if self.state == "starting":
                        self.state = "running"
                    log.info("runtime %s with %d actors", self.state, len(self.children))
                    task_status.started()
                    await self._stop_requested.wait()
                    await self.shutdown()
                    nursery.cancel_scope.cancel()
        finally:
            self.state = "stopped"
            self.store.close()
            checkpointer.close()
            self.inspector.close()
            lock.close()

    async def _stop_on_signal(self, signals: Any) -> None:
        async for signum in signals:
            log.info("received %s, stopping", signal.Signals(signum).name)
            self.request_stop()

    async def shutdown(self) -> None:
        """Stop every child in reverse start order, each by its own shutdown rule."""
        self.state = "stopping"
        for child in reversed(list(self.children.values())):
            await self._stop(child)

    # -- children ------------------------------------------------------------------------

    async def start_child(self, spec: ChildSpec, *, dynamic: bool = True) -> Child:
        """Start a child and wait until it is ready (or has given up). A runtime on its way
        down starts nothing: the shutdown would not see the child to stop it."""
        if self._stop_requested.is_set():
            raise ValueError(f"the runtime is stopping: {spec.name} is not started")
        if spec.name in self.children and self.children[spec.name].state not in (
            "stopped",
            "failed",
        ):
            raise ValueError(f"a child named {spec.name!r} is already running")
        assert self._nursery is not None
        door = load_door(spec.door)
        child = Child(spec, RestartHistory(self.config.max_restarts, self.config.max_seconds))
        child.dynamic = dynamic
        self.children[spec.name] = child
        self.doors.set(spec.name, door)
        await self._nursery.start(self._keep, child)
        self._refresh_state()
        return child

    async def stop_child(self, name: str, *, remove: bool = True) -> None:
        child = self.children.get(name)
        if child is None:
            raise KeyError(name)
        await self._stop(child)
        if remove:
            del self.children[name]
            self.doors.drop(name)
        self._refresh_state()

    def _refresh_state(self) -> None:
        """Degraded while some child is failed; back to running once none is."""
        if self.state in ("running", "degraded"):
            self.state = "degraded" if self.degraded else "running"

    def gate(self, sender: str) -> Gate:
        """The door's check for `sender`'s messages (a child's, or a control client's)."""
        gate = self.gates.get(sender)
        if gate is None:
            gate = self.gates[sender] = Gate(sender, self.doors, self.config.app_limits)
            if gate.limits is not None:
                assert self.switchboard is not None
                self.switchboard.metered.add(sender)
        return gate

    def kill_child(self, name: str) -> int:
        """SIGKILL a child now (recovery testing). It restarts like after any crash."""
        child = self.children[name]
        pid = child.pid
        if pid is None or child.process is None:
            raise ProcessLookupError(f"{name} has no running process")
        child.kill_requested = True
        child.process.signal(signal.SIGKILL)
        return pid

    async def _stop(self, child: Child) -> None:
        if child.state in ("stopped", "failed") and child.process is None:
            return
        # A child not yet ready has taken no message, and may not hear SIGTERM yet (an app
        # is its pid namespace's init, which ignores a signal it has no handler for): it is
        # killed at once rather than waited on for its whole grace.
        grace = 0.0 if child.state in ("starting", "restarting") else child.spec.shutdown
        child.stopping = True
        child.stop_requested.set()
        child.state = "stopping"
        if child.process is not None and child.process.returncode is None:
            code = await child.process.stop(grace)
            log.info("%s stopped: %s", child.spec.name, describe_exit(code))
        await child.stopped.wait()

    async def _keep(self, child: Child, task_status: trio.TaskStatus[None]) -> None:
        name = child.spec.name
        announced = False

        def on_ready() -> None:
            nonlocal announced
            callbacks, child.on_ready = child.on_ready, []
            for callback in callbacks:
                callback()
            if not announced:
                announced = True
                task_status.started()

        try:
            while True:
                code, reason, attributed, starved = await self._incarnation(child, on_ready)
                child.last_exit = reason
                self.record(name, "exit", reason)
                # Stopped on purpose, or the runtime is stopping: a child that dies while it
                # waits for its turn to be stopped is not started again.
                if child.stopping or self.state == "stopping":
                    child.state = "stopped"
                    return
                abnormal = code != 0
                if child.spec.restart is Restart.TEMPORARY or (
                    child.spec.restart is Restart.TRANSIENT and not abnormal
                ):
                    log.info(
                        "%s ended (%s); its restart policy is %s",
                        name,
                        reason,
                        child.spec.restart.value,
                    )
                    child.state = "stopped"
                    return
                # A crash blamed on the message being handled is bounded by max_deliver
                # instead: a poison message alone must not exhaust the intensity.
                # A crash while the data dir's disk is full is the disk's, not the child's:
                # it does not count toward the intensity, and the restart waits the longest
                # backoff, for room.
                if not (attributed or starved) and not child.history.record(time.monotonic()):
                    await self._escalate(child, reason)
                    return
                child.restarts += 1
                child.state = "restarting"
                if attributed:
                    delay = 0.0
                elif starved:
                    delay = self.config.backoff_max
                else:
                    delay = child.history.backoff(self.config.backoff_base, self.config.backoff_max)
                log.warning("%s %s; restart %d in %.2f s", name, reason, child.restarts, delay)
                self.record(name, "restart", f"restart {child.restarts} in {delay:.2f} s: {reason}")
                later = self._later_siblings(child)
                for sibling in reversed(later):
                    await self._stop(sibling)
                if delay:
                    with trio.move_on_after(delay):
                        await child.stop_requested.wait()
                if child.stopping:  # stopped while it waited: do not start it again
                    child.state = "stopped"
                    return
                if later:
                    self._restart_after_ready(child, later)
        finally:
            child.process = None
            if not announced:
                task_status.started()
            child.stopped.set()

    def _later_siblings(self, child: Child) -> list[Child]:
        if self.config.strategy != "rest_for_one":
            return []
        names = list(self.children)
        later = names[names.index(child.spec.name) + 1 :]
        return [self.children[n] for n in later if self.children[n].state not in ("failed",)]

    async def _room_to_start(self) -> None:
        """A start writes before anything runs (the mailbox's recovery, each actor's own
        files): on a full disk it waits for room, as a running runtime's commits do, rather
        than failing halfway."""
        delay = 0.05
        if disk_full(self.data_dir):
            log.warning("the data dir's disk is full: the start waits for room")
        while disk_full(self.data_dir):
            await trio.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _restart_after_ready(self, child: Child, later: list[Child]) -> None:
        """rest_for_one: once `child` is back, start the later siblings again, in order."""
        assert self._nursery is not None

        nursery = self._nursery

        async def restart_later() -> None:
            for sibling in later:
                if sibling.spec.name in self.children and not self._stop_requested.is_set():
                    again = await self.start_child(sibling.spec, dynamic=sibling.dynamic)
                    again.restarts = sibling.restarts + 1

        child.on_ready.append(lambda: nursery.start_soon(restart_later))

    async def _escalate(self, child: Child, reason: str) -> None:
        name = child.spec.name
        child.state = "failed"
        self.state = "degraded"
        self.record(name, "failed", f"over {self.config.max_restarts} restarts: {reason}")
        log.error(
            "%s exceeded %d restarts in %.1f s (%s): marked failed, runtime degraded",
            name,
            self.config.max_restarts,
            self.config.max_seconds,
            reason,
        )
        assert self.switchboard is not None
        for other in self.children:
            if other != name:
                await self.switchboard.submit(
                    "message",
                    "supervisor",
                    {
                        "v": 1,
                        "id": new_id(),
                        "to": other,
                        "type": "kernel.actor_failed",
                        "body": pack_body({"name": name, "reason": reason}),
                    },
                )

    async def _incarnation(self, child: Child, on_ready: Any) -> tuple[int, str, bool, bool]:
        """Run one process of `child` to its end: (exit status, reason, message blamed,
        the data dir's disk full when it ended)."""
        assert self.switchboard is not None
        spec = child.spec
        process = await self._spawn(spec)
        child.process = process
        if child.stopping:  # stopped while its process was being made: it never runs
            process.signal(signal.SIGKILL)
        child.kill_requested = False
        child.watchdog_reason = ""
        child.started_at = time.monotonic()
        channel = Channel(process.sock, max_frame=self.config.max_frame)
        violation = ""
        reading = trio.CancelScope()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(channel.run_writer)
            nursery.start_soon(process.run_aside)
            nursery.start_soon(_end_at_exit, process, reading)
            if self.config.heartbeat_interval:
                nursery.start_soon(self._heartbeat, child, channel, process)
            with reading:
                try:
                    await self._read(child, channel, on_ready)
                except (FrameError, ProtocolViolation) as exc:
                    violation = f"sent a bad frame ({exc})"
                    log.error("%s %s: closing its channel", spec.name, violation)  # noqa: TRY400 (expected, no traceback)
                    process.signal(signal.SIGKILL)
            nursery.cancel_scope.cancel()
        channel.close()
        with trio.move_on_after(2.0):  # EOF came first; the exit follows at once
            await process.wait()
        if process.returncode is None:
            process.signal(signal.SIGKILL)
        code = await process.wait()
        # Seen now: the switchboard records the end only once there is room again.
        starved = disk_full(self.data_dir)
        note = await process.release()
        reason = violation or child.watchdog_reason or process.failure or describe_exit(code)
        if note:
            reason = f"{reason} ({note})"
        # A bad frame is the child's doing however it then exited: the channel is closed
        # at the bad frame, and under load the child may see the EOF and exit 0 before
        # the SIGKILL lands (which made the restart count against the intensity).
        blame = (code != 0 or bool(violation)) and not child.kill_requested and not child.stopping
        attributed = await self.switchboard.request(
            "down", spec.name, {"blame": blame, "reason": reason}
        )
        return code, reason, bool(attributed and blame), starved

    async def _spawn(self, spec: ChildSpec) -> Incarnation:
        log_dir = self.data_dir / "logs"
        if spec.isolation is not None:
            return await self._spawn_jailed(spec, log_dir)
        async with self._zygote_lock:
            if self.zygote is not None and not self.zygote.alive and self.state != "stopping":
                # It died (and its actors with it): a new one, so restarts stay fast.
                log.warning("the zygote is gone: starting a new one")
                assert self._nursery is not None
                self.zygote = Zygote(self.zygote.preload)
                await self._nursery.start(self.zygote.run)
        # A child with an environment of its own is exec'd, never forked.
        if self.zygote is not None and self.zygote.alive and self.child_env is None:
            try:
                return await self.zygote.spawn(spec, log_dir=log_dir)
            except RuntimeError as exc:
                log.warning("fork of %s failed (%s): starting a new process", spec.name, exc)
        return ChildProcess(spec, log_dir=log_dir, env=self.child_env)

    async def _app_zygote(self, plan: JailPlan) -> tuple[AppZygote | None, str]:
        """The app zygote to launch from, started if it is not running (on the first launch,
        and after it died); None where it cannot be used. With how the launch is made."""
        if self.config.app_launch == "exec":
            return None, "exec (the runtime's setting)"
        async with self._app_zygote_lock:
            zygote = self.app_zygote
            gone = zygote is None or not (zygote.alive or zygote.unusable)
            if gone and self.state != "stopping":
                assert self._nursery is not None
                self.app_zygote = zygote = AppZygote(plan.hidden[0], plan.env)
                await self._nursery.start(zygote.run)
        if zygote is None or not zygote.alive:
            problem = zygote.problem if zygote is not None else "the runtime is stopping"
            return None, f"exec (app zygote unavailable: {problem})"
        return zygote, "zygote"

    async def _spawn_jailed(self, spec: ChildSpec, log_dir: Path) -> Incarnation:
        """An installed app: forked from the app zygote and jailed, or exec'd through the
        launcher (`actors.kernel.spawning.jail`); never forked from the kernel's zygote,
        which is a copy of a trusted process (memory, fds, environment)."""
        isolation = spec.isolation
        assert isolation is not None
        limits = CgroupLimits(isolation.max_processes, isolation.memory_max, isolation.cpu_shares)
        cgroup = await prepare_cgroup(runtime_id(self.data_dir), isolation.scope, limits)
        plan = plan_jail(spec, self.data_dir, self.child_env or os.environ, cgroup)
        zygote, launch = await self._app_zygote(plan)
        try:
            process = ChildProcess(
                spec, log_dir=log_dir, env=None, jail=plan, cgroup=cgroup, app_zygote=zygote
            )
        except OSError as exc:
            if zygote is None:
                await cgroup.destroy()
                raise
            zygote = None
            launch = f"exec (app zygote unavailable: {exc})"
            process = ChildProcess(spec, log_dir=log_dir, env=None, jail=plan, cgroup=cgroup)
        except BaseException:
            await cgroup.destroy()
            raise
        report = await process.read_jail_report(self.config.hello_timeout)
        if report is None and zygote is not None and not zygote.alive:
            # It died mid-launch, taking the fork with it: this launch is exec'd instead.
            process.discard()
            launch = "exec (the app zygote died mid-launch)"
            log.warning("%s: %s", spec.name, launch)
            process = ChildProcess(spec, log_dir=log_dir, env=None, jail=plan, cgroup=cgroup)
            report = await process.read_jail_report(self.config.hello_timeout)
        process.isolation = merge_report(report, cgroup, spec, launch)
        log_jail_report(spec.name, process.isolation)
        child = self.children.get(spec.name)
        if child is not None and child.dynamic and child.state == "starting":
            # Its first process, and an actor waits for the start (the app manager's
            # launch): one that ends before it is ready failed to start. It is not
            # restarted (it would only fail again until the restart intensity gave up):
            # the start is answered at once, its reason taken from the app's log.
            def failed_start() -> bool:
                if child.state != "starting" or child.stopping:
                    return False
                child.stopping = True
                log.warning("%s ended before it was ready: its start failed", spec.name)
                return True

            process.start_failed = failed_start
        return process

    async def _read(self, child: Child, channel: Channel, on_ready: Any) -> None:
        assert self.switchboard is not None
        spec = child.spec
        batches = channel.packed_batches()
        first = None
        with trio.move_on_after(self.config.hello_timeout):
            first = await anext(batches, None)
        if first is None:
            return
        hello = first[0][0]
        if hello["type"] != "kernel.hello":
            raise ProtocolViolation(f"first frame is {hello['type']!r}, not kernel.hello")
        channel.send_nowait(
            {
                "type": "kernel.welcome",
                "name": spec.name,
                "config": spec.config,
                "boot": self.boot_id,
                "synchronous": self.config.synchronous,
            }
        )
        await self.switchboard.request("attach", spec.name, channel)
        # A start hook that never returns must not hold up the children after it.
        not_ready = trio.CancelScope(deadline=trio.current_time() + self.config.ready_timeout)
        with not_ready:
            await self._read_frames(
                child, channel, first[1:], batches, on_ready=on_ready, not_ready=not_ready
            )
        if not_ready.cancelled_caught:
            raise ProtocolViolation(f"not ready within {self.config.ready_timeout:g} s")

    async def _read_frames(
        self,
        child: Child,
        channel: Channel,
        after_hello: list[tuple[Frame, bytes]],
        batches: AsyncIterator[list[tuple[Frame, bytes]]],
        *,
        on_ready: Any,
        not_ready: trio.CancelScope,
    ) -> None:
        """Everything the child says after its hello. What one receive brought goes to the
        switchboard as one list (a queue operation per frame cost as much as its insert),
        flushed before anything that must come after it."""
        assert self.switchboard is not None
        switchboard = self.switchboard
        name = child.spec.name
        gate = self.gate(name)
        limits = gate.limits
        checks = self.config.door_checks
        ready = False
        batch = after_hello
        while True:
            ops: list[Op] = []
            for frame, packed in batch:
                kind = frame["type"]
                if kind in _SUPERVISOR_KINDS:
                    await switchboard.submit_many(ops)
                    ops = []
                    if kind == "kernel.ready":
                        if ready:  # a second `up` would forget what is in flight to it
                            raise ProtocolViolation("kernel.ready sent twice")
                        ready = True
                        not_ready.deadline = math.inf
                        await self._ready(child, channel, on_ready)
                    else:
                        self._supervisor_frame(child, channel, frame)
                    continue
                try:
                    op, payload = classify(frame)
                except ProtocolViolation:
                    await switchboard.submit_many(ops)  # what came before it is taken
                    raise
                if op == "hold" and limits is not None:
                    # An app's process answers for its messages at once: what it holds
                    # would be kept from the blame of its crashes.
                    await switchboard.submit_many(ops)
                    raise ProtocolViolation("kernel.hold is the runtime's actors' alone")
                if op == "message" and checks:
                    try:
                        gate.check(payload)
                    except Refusal as refusal:
                        reply = gate.refuse(payload, refusal)
                        if reply is not None:
                            channel.send_nowait(reply)
                        continue
                ops.append((op, name, payload, None, packed if op == "message" else None))
            if limits is not None:
                # An app's pace and its sending credits: while either is spent, its
                # channel is not read and its own sends block; nothing is dropped.
                size = sum(len(packed) for _, packed in batch)
                await gate.pace(len(ops) + (len(batch) - len(ops)) / 10, size)
                await switchboard.wait_for_room(name, limits.outstanding)
            await switchboard.submit_many(ops)
            next_batch = await anext(batches, None)
            if next_batch is None:
                return
            child.last_heard = time.monotonic()  # whatever it says shows it alive
            batch = next_batch

    async def _ready(self, child: Child, channel: Channel, on_ready: Any) -> None:
        assert self.switchboard is not None
        spec = child.spec
        await self.switchboard.request(
            "up",
            spec.name,
            {
                "channel": channel,
                "window": spec.window,
                "max_deliver": spec.max_deliver,
                "reaches_outside": spec.reaches_outside,
                "syncs_before": spec.syncs_before,
            },
        )
        child.state = "running"
        child.last_heard = time.monotonic()
        self.record(spec.name, "ready", f"pid {child.pid}")
        on_ready()

    async def _heartbeat(self, child: Child, channel: Channel, process: Incarnation) -> None:
        """Ping the child on the heartbeat's ticks while it runs, unless it said something
        in the last half interval (any frame shows it alive); note when it has been silent
        for `unresponsive_after` seconds and when it answers again, and with
        `restart_unresponsive` SIGKILL it (it restarts by its policy). The ticks fall at
        whole multiples of `heartbeat_interval` on the supervisor's clock, the same for every
        child, so an idle runtime's heartbeats wake the supervisor once an interval; a child
        whose loop is seen waiting for work (`waits_for_work`) is not pinged at all."""
        config = self.config
        interval = config.heartbeat_interval
        # A child seen waiting for work is looked at again at the next of every
        # `idle_ticks`-th tick (the same ticks for every child), no later than its silence
        # could reach `unresponsive_after`: one stuck meanwhile is pinged then and found
        # silent one tick later, as when every tick looks; an idle runtime's heartbeat
        # wakes the supervisor once in `idle_ticks` ticks.
        idle_ticks = max(1, math.floor(config.unresponsive_after / interval))
        name = child.spec.name
        child.unresponsive = False
        n = 0
        every = interval
        while True:
            await trio.sleep_until((math.floor(trio.current_time() / every) + 1) * every)
            every = interval
            if child.state != "running":
                continue
            if child.silent_s() >= interval / 2:
                if waits_for_work(process.pid):  # it would answer at once: not woken to ask
                    child.last_heard = time.monotonic()
                    every = interval * idle_ticks
                else:
                    n += 1
                    try:
                        channel.send_nowait({"type": "kernel.ping", "n": n})
                    except Exception:  # closed: the incarnation is ending
                        child.unresponsive = False
                        return
            silent = child.silent_s()
            if silent <= config.unresponsive_after:
                if child.unresponsive:
                    child.unresponsive = False
                    log.warning("%s answers its heartbeat again", name)
                    self.record(name, "responsive")
                continue
            if not child.unresponsive:
                child.unresponsive = True
                log.warning("%s unresponsive: no heartbeat answer for %.1f s", name, silent)
                self.record(name, "unresponsive", f"no heartbeat answer for {silent:.1f} s")
            if config.restart_unresponsive and process.returncode is None:
                child.watchdog_reason = f"unresponsive for {silent:.1f} s: killed by the watchdog"
                log.warning("%s %s", name, child.watchdog_reason)
                process.signal(signal.SIGKILL)
                return

    def _supervisor_frame(self, child: Child, channel: Channel, frame: Frame) -> None:
        """kernel.pong, kernel.supervise and kernel.stats: for the supervisor itself."""
        kind = frame["type"]
        if kind == "kernel.pong":
            child.last_heard = time.monotonic()
        elif kind == "kernel.supervise":
            # In its own task: starting a child waits until it is ready.
            assert self._nursery is not None
            self._nursery.start_soon(
                supervise_for, self, child.spec.name, channel, check_supervise(frame)
            )
        else:
            waiter = child.stats_waiters.get(str(frame.get("nonce")))
            if waiter is not None:
                waiter[1].append(frame.get("stats") or {})
                waiter[0].set()

    async def actor_statistics(self, name: str, timeout: float = 0.5) -> dict[str, Any] | None:
        """Ask a running actor for its `statistics()` record; None if it does not answer."""
        child = self.children.get(name)
        ep = self.switchboard.endpoints.get(name) if self.switchboard else None
        if child is None or ep is None or ep.channel is None:
            return None
        nonce = new_id()
        waiter: tuple[trio.Event, list[dict[str, Any]]] = (trio.Event(), [])
        child.stats_waiters[nonce] = waiter
        try:
            ep.channel.send_nowait({"type": "kernel.stats_request", "nonce": nonce})
            with trio.move_on_after(timeout):
                await waiter[0].wait()
        except Exception:
            return None
        finally:
            child.stats_waiters.pop(nonce, None)
        stats = waiter[1][0] if waiter[1] else None
        if stats is not None and child.process is not None and child.process.isolation:
            stats["isolation"] = child.process.isolation  # what its launcher enforced
        return stats


async def _end_at_exit(process: Incarnation, reading: trio.CancelScope) -> None:
    """An incarnation ends when its process exits, whatever holds its channel: what it
    started is killed, and the channel read for `EXIT_GRACE` more seconds at most."""
    await process.wait()
    process.kill_remains()
    reading.deadline = min(reading.deadline, trio.current_time() + EXIT_GRACE)
