"""An installed app's cgroup: a process limit, a memory limit and a CPU share, and the one
place from which everything the app started can be found and killed.

Each app gets `lineup/<runtime-id>/<scope>` below the supervisor's own cgroup, so whatever
limits the runtime itself runs under bound its apps too. cgroup v2 is used for a
controller where it is available in the supervisor's v2 cgroup and can be enabled below
it; otherwise that controller's v1 hierarchy; otherwise it is reported as not enforced.
The launcher joins every directory before it forks the app, so the app and all it starts
are born inside. Ending an incarnation kills everything still in the cgroup, waits until
it is empty and removes it; a cgroup left by a runtime that was killed is emptied and
reused at the next start of the app; one left empty by another runtime that was killed is
removed by the next runtime that starts an app (`STALE_AFTER`).

The limits (`Isolation`): `pids.max` (`max_processes`, 64), a memory limit with swap
included where the kernel accounts it (`memory_max`, 512 MiB), and a CPU share
(`cpu_shares`, 512 against a trusted actor's 1024; under cgroup v2 `cpu.weight` = shares
* 100 / 1024). The runtime id in the path is a hash of the data dir.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import trio

CONTROLLERS: Final = ("pids", "memory", "cpu")
STEP: Final = {"pids": "processes", "memory": "memory", "cpu": "cpu"}
MOUNTINFO: Final = Path("/proc/self/mountinfo")
OWN_CGROUP: Final = Path("/proc/self/cgroup")
# An app's cgroup is empty only from its creation until its launcher joins (milliseconds),
# and after its end: an empty one older than this was left by a runtime that was killed.
STALE_AFTER: Final = 60.0


@dataclass(frozen=True)
class CgroupLimits:
    processes: int
    memory: int
    cpu_shares: int


def runtime_id(data_dir: Path) -> str:
    """One runtime per data dir (its lock): the data dir names its apps' cgroups, so the
    next start on it finds what a killed runtime left."""
    return hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]


@dataclass
class _Hierarchy:
    version: int
    controllers: frozenset[str]
    own: Path  # the supervisor's cgroup in it


def _hierarchies() -> list[_Hierarchy]:
    """The cgroup hierarchies mounted here, each at the supervisor's own cgroup."""
    own: dict[str, str] = {}
    for line in OWN_CGROUP.read_text().splitlines():
        _, names, path = line.split(":", 2)
        own[names] = path
    found = []
    for line in MOUNTINFO.read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, (fstype, _, options) = before.split(), after.split(" ", 2)
        root, mountpoint = fields[3], fields[4]
        if fstype == "cgroup2":
            names, version = "", 2
        elif fstype == "cgroup":
            names = ",".join(o for o in options.split(",") if o in CONTROLLERS)
            version = 1
        else:
            continue
        inside = own.get(names) if version == 2 else _v1_path(own, options)
        if inside is None or not (inside + "/").startswith(root.rstrip("/") + "/"):
            continue  # the supervisor's cgroup is not below this mount
        where = Path(mountpoint) / inside[len(root.rstrip("/")) :].lstrip("/")
        controllers = _v2_controllers(where) if version == 2 else frozenset(names.split(","))
        found.append(_Hierarchy(version, controllers - {""}, where))
    return found


def _v1_path(own: dict[str, str], options: str) -> str | None:
    mounted = {o for o in options.split(",") if o in CONTROLLERS}
    for names, path in own.items():
        if mounted and mounted <= set(names.split(",")):
            return path
    return None


def _v2_controllers(where: Path) -> frozenset[str]:
    try:
        return frozenset((where / "cgroup.controllers").read_text().split()) & set(CONTROLLERS)
    except OSError:
        return frozenset()


@dataclass
class AppCgroup:
    """The directories the launcher joins, and what they enforce."""

    dirs: list[Path] = field(default_factory=list)
    enforced: dict[str, str] = field(default_factory=dict)
    not_enforced: dict[str, str] = field(default_factory=dict)
    _memory: Path | None = None

    def pids(self) -> set[int]:
        found: set[int] = set()
        for where in self.dirs:
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (where / "cgroup.procs").read_text().split())
        return found

    def kill(self) -> None:
        """SIGKILL everything in it now (one pass: a process forked meanwhile is caught by
        the next one, and the pid namespace's end takes the rest)."""
        for where in self.dirs:
            if (where / "cgroup.kill").exists():
                with contextlib.suppress(OSError):
                    (where / "cgroup.kill").write_text("1")
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    async def destroy(self, timeout: float = 5.0) -> bool:
        """Kill until empty, then remove it; False if something outlived `timeout`."""
        with trio.move_on_after(timeout):
            while self.pids():
                self.kill()
                await trio.sleep(0.01)
            for where in self.dirs:
                while True:
                    try:
                        where.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError as exc:
                        if exc.errno != errno.EBUSY:  # a dying task is still counted
                            raise
                        await trio.sleep(0.01)
                for parent in (where.parent, where.parent.parent):  # <runtime-id>, lineup
                    with contextlib.suppress(OSError):
                        parent.rmdir()
            return True
        return False

    def oom_kills(self) -> int:
        """Processes the kernel killed for its memory limit, so far."""
        if self._memory is None:
            return 0
        for name in ("memory.events", "memory.oom_control"):
            with contextlib.suppress(OSError):
                for line in (self._memory / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return 0


async def prepare_cgroup(runtime: str, scope: str, limits: CgroupLimits) -> AppCgroup:
    """The app's cgroup, emptied if a killed runtime left it, with its limits set."""
    group = AppCgroup()
    try:
        hierarchies = _hierarchies()
    except OSError as exc:
        hierarchies = []
        reason = f"cgroups unreadable ({exc.strerror or exc})"
        for controller in CONTROLLERS:
            group.not_enforced[STEP[controller]] = reason
    placed: set[str] = set()
    for hierarchy in hierarchies:
        _sweep(hierarchy.own / "lineup")
    for hierarchy in sorted(hierarchies, key=lambda h: -h.version):  # v2 first
        wanted: list[str] = [
            c for c in CONTROLLERS if c in hierarchy.controllers and c not in placed
        ]
        if not wanted:
            continue
        try:
            where, enabled = _make(hierarchy, runtime, scope, wanted)
        except OSError as exc:
            for controller in wanted:
                group.not_enforced[STEP[controller]] = f"cgroup v{hierarchy.version}: {exc}"
            continue
        if not enabled:
            continue
        stale = AppCgroup(dirs=[where])
        if stale.pids():  # left by a runtime that was killed
            await stale.destroy()
            where, enabled = _make(hierarchy, runtime, scope, wanted)
        for controller in enabled:
            try:
                detail = _limit(where, hierarchy.version, controller, limits)
            except OSError as exc:
                group.not_enforced[STEP[controller]] = f"{controller}: {exc}"
                continue
            group.enforced[STEP[controller]] = f"{detail} (cgroup v{hierarchy.version})"
            group.not_enforced.pop(STEP[controller], None)
            placed.add(controller)
            if controller == "memory":
                group._memory = where
        group.dirs.append(where)
    for controller in CONTROLLERS:
        if controller not in placed and STEP[controller] not in group.not_enforced:
            group.not_enforced[STEP[controller]] = f"no {controller} cgroup controller here"
    return group


def _sweep(lineup: Path) -> None:
    """Remove the empty app cgroups that killed runtimes left behind."""
    now = time.time()
    with contextlib.suppress(OSError):  # another runtime may sweep at the same time
        for runtime in lineup.iterdir():
            for scope in runtime.iterdir():
                with contextlib.suppress(OSError):
                    old = scope.is_dir() and now - scope.stat().st_ctime > STALE_AFTER
                    if old and not (scope / "cgroup.procs").read_text().strip():
                        scope.rmdir()
            with contextlib.suppress(OSError):
                runtime.rmdir()


def _make(
    hierarchy: _Hierarchy, runtime: str, scope: str, wanted: list[str]
) -> tuple[Path, list[str]]:
    """Create lineup/<runtime>/<scope> below the supervisor's cgroup; the controllers in
    force there (v2: those that could be enabled on the way down)."""
    where = hierarchy.own
    for part in ("lineup", runtime, scope):
        if hierarchy.version == 2:
            with contextlib.suppress(OSError):  # refused where processes live: checked below
                (where / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
        where = where / part
        with contextlib.suppress(FileExistsError):
            where.mkdir(mode=0o755)
    if hierarchy.version == 1:
        return where, wanted
    return where, [c for c in wanted if c in _v2_controllers(where)]


def _limit(where: Path, version: int, controller: str, limits: CgroupLimits) -> str:
    if controller == "pids":
        (where / "pids.max").write_text(str(limits.processes))
        return f"at most {limits.processes} tasks"
    if controller == "memory":
        mib = limits.memory // (1 << 20)
        if version == 2:
            (where / "memory.max").write_text(str(limits.memory))
            with contextlib.suppress(OSError):
                (where / "memory.swap.max").write_text("0")
        else:
            # memsw (memory and swap, only where swap is accounted) may never be below the
            # memory limit: set before it when it grows, after it when it shrinks.
            memsw = where / "memory.memsw.limit_in_bytes"
            with contextlib.suppress(OSError):
                memsw.write_text(str(limits.memory))
            (where / "memory.limit_in_bytes").write_text(str(limits.memory))
            with contextlib.suppress(OSError):
                memsw.write_text(str(limits.memory))
        return f"at most {mib} MiB, swap included"
    if version == 2:
        weight = max(1, min(10000, limits.cpu_shares * 100 // 1024))
        (where / "cpu.weight").write_text(str(weight))
        return f"cpu.weight {weight} (the runtime's is 100)"
    (where / "cpu.shares").write_text(str(limits.cpu_shares))
    return f"cpu.shares {limits.cpu_shares} (the runtime's is 1024)"
