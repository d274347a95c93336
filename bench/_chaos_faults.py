"""The faults of `lineup bench chaos`: a schedule drawn from the seed, and their injection.

The schedule (when, and which kind) is drawn once, up front, from `random.Random(seed)`,
so the same seed gives the same schedule; which process a fault hits is drawn from the same
generator among those running at that moment. Every fault is logged with its wall-clock
time, kind and target.

The kinds: SIGKILL of an actor, of an app's process, of a zygote and of the root
`lineup run` (started again on the same data dir); SIGSTOP of an actor for 2-4 s, then
SIGCONT; a SIGKILL and restart of the AppServer; a spell of the AppServer's own faults
(dropped connections, duplicated frames, delayed frames), then a clean restart; and the data
dir's file system filling up for a few seconds (where it is a small file system).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from actors.kernel.spawning import zygote
from actors.kernel.spawning.jail import app_zygote

from ._chaos_world import FaultyAppServer, Runtime, SmallDisk

ACTORS = (
    "router",
    "store",
    "transport",
    "tool_router",
    "app_manager",
    "capability_gateway",
    "host",
    "web_host",
)
# One round of kinds, shuffled each round: the cheap faults come more often.
ROUND = (
    *("kill_actor",) * 5,
    *("kill_app",) * 3,
    *("stop_actor",) * 3,
    "kill_zygote",
    "kill_runtime",
    "appserver_restart",
    "appserver_faults",
    "disk_full",
)
ZYGOTE_NAMES = (zygote.ZYGOTE_NAME, app_zygote.ZYGOTE_NAME)
GAP_S = (0.3, 0.9)  # between the end of one fault and the next
STOP_S = (2.0, 4.0)
SPELL_S = (2.0, 4.0)  # the AppServer's faults, and the disk kept full
TaskStatus = trio.TaskStatus[None]
FAULT_OPTIONS = (
    ["--drop-every", "7"],
    ["--duplicate-every", "3"],
    ["--delay-ms", "150"],
)


@dataclass(frozen=True)
class Fault:
    at_ns: int  # wall clock: when it was injected
    kind: str
    target: str


@dataclass
class FaultLog:
    faults: list[Fault] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # kind -> times nothing to hit

    def add(self, kind: str, target: str) -> None:
        self.faults.append(Fault(time.time_ns(), kind, target))

    def by_kind(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for fault in self.faults:
            counts[fault.kind] = counts.get(fault.kind, 0) + 1
        return dict(sorted(counts.items()))


def schedule(seed: int, count: int, *, disk: bool) -> list[tuple[float, str]]:
    """`count` faults: (gap before it in seconds, kind), the same for the same seed."""
    rng = random.Random(seed)
    kinds: list[str] = []
    while len(kinds) < count:
        round_ = [kind for kind in ROUND if disk or kind != "disk_full"]
        rng.shuffle(round_)
        kinds.extend(round_)
    return [(rng.uniform(*GAP_S), kind) for kind in kinds[:count]]


class Injector:
    def __init__(
        self,
        runtime: Runtime,
        server: FaultyAppServer,
        disk: SmallDisk | None,
        rng: random.Random,
        log: FaultLog,
    ) -> None:
        self.runtime = runtime
        self.server = server
        self.disk = disk
        self.rng = rng
        self.log = log

    async def run(self, plan: list[tuple[float, str]], ends_at: float) -> None:
        """Inject the planned faults one after the other until `ends_at` (trio time); a
        stopped actor and a full disk are let go in the background, the next fault meanwhile."""
        async with trio.open_nursery() as background:
            for gap, kind in plan:
                await trio.sleep(gap)
                if trio.current_time() >= ends_at:
                    return
                if kind in ("stop_actor", "disk_full"):
                    await background.start(getattr(self, kind))
                else:
                    await getattr(self, kind)()

    # --- processes -----------------------------------------------------------------------

    def _actors(self, wanted: Any) -> list[dict[str, Any]]:
        return [
            a
            for a in self.runtime.actors()
            if a.get("pid") and a.get("state") == "running" and wanted(str(a["name"]))
        ]

    def _kill(self, kind: str, candidates: list[tuple[str, int]]) -> None:
        if not candidates:
            self.log.skipped[kind] = self.log.skipped.get(kind, 0) + 1
            return
        name, pid = self.rng.choice(sorted(candidates))
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # exited on its own meanwhile
            return
        self.log.add(kind, name)

    async def kill_actor(self) -> None:
        found = self._actors(lambda name: name in ACTORS)
        self._kill("kill_actor", [(a["name"], a["pid"]) for a in found])

    async def kill_app(self) -> None:
        found = self._actors(lambda name: name.startswith("app."))
        self._kill("kill_app", [(a["name"], a["pid"]) for a in found])

    async def kill_zygote(self) -> None:
        actor_pids = {a["pid"] for a in self.runtime.actors()}
        root = self.runtime.process.pid if self.runtime.process else 0
        zygotes = [
            (f"zygote {pid}", pid)
            for pid, name in _descendants(root)
            if name in ZYGOTE_NAMES and pid not in actor_pids
        ]
        self._kill("kill_zygote", [(name.split()[0], pid) for name, pid in zygotes])

    async def stop_actor(
        self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        found = self._actors(lambda name: name in ACTORS or name.startswith("app."))
        if not found:
            self.log.skipped["stop_actor"] = self.log.skipped.get("stop_actor", 0) + 1
            task_status.started()
            return
        actor = self.rng.choice(sorted(found, key=lambda a: str(a["name"])))
        pid, held = int(actor["pid"]), self.rng.uniform(*STOP_S)
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            task_status.started()
            return
        self.log.add("stop_actor", str(actor["name"]))
        task_status.started()
        try:
            await trio.sleep(held)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    async def kill_runtime(self) -> None:
        if self.runtime.process is None:
            return
        self.log.add("kill_runtime", "lineup run")
        await self.runtime.kill_and_restart()

    # --- the AppServer -------------------------------------------------------------------

    async def appserver_restart(self) -> None:
        self.log.add("appserver_restart", "appserver")
        await self.server.restart([], kill=True)

    async def appserver_faults(self) -> None:
        options = self.rng.choice(FAULT_OPTIONS)
        self.log.add("appserver_faults", " ".join(options))
        await self.server.restart(list(options), kill=False)
        await trio.sleep(self.rng.uniform(*SPELL_S))
        await self.server.restart([], kill=False)

    # --- the disk ------------------------------------------------------------------------

    async def disk_full(
        self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        if self.disk is None:
            self.log.skipped["disk_full"] = self.log.skipped.get("disk_full", 0) + 1
            task_status.started()
            return
        disk = self.disk
        await trio.to_thread.run_sync(disk.fill)
        self.log.add("disk_full", str(disk.mount_point.name))
        task_status.started()
        try:
            await trio.sleep(self.rng.uniform(*SPELL_S))
        finally:
            disk.free()


def _descendants(root: int) -> list[tuple[int, str]]:
    """Every process under `root`, with its name (what `ps` shows)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            found.append((pid, Path(f"/proc/{pid}/comm").read_text().strip()))
        except OSError:
            continue
    return found
