"""What one call costs each process of a path: CPU time (`/proc/PID/stat`, user + system)
around a batch of calls, and for the runtime the supervisor's commits (its control
socket's `status`: `batches`, one SQLite transaction each, and `frames`) and where calls
wait: the deepest mailboxes (messages stored or delivered, not yet handled) while a batch
runs, sampled through the control socket's `actors`.

CPU time shows what bounds a burst on a small machine (two cores run at most 2,000 ms of
CPU a second); commits show why: at a paced rate each message a hop carries is a
transaction of its own.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

_TICKS = os.sysconf("SC_CLK_TCK")
DEPTH_EVERY_S = 0.25
DEEPEST_SHOWN = 3


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


class Meter:
    """CPU per named process, and optionally a counter of commits and frames, taken
    before and after a batch of calls."""

    def __init__(
        self,
        pids: dict[str, int],
        counters: Callable[[], dict[str, int]] | None = None,
        depths: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        self.pids = pids
        self.counters = counters
        self.depths = depths
        self._cpu: dict[str, float] = {}
        self._counted: dict[str, int] = {}

    @asynccontextmanager
    async def deepest(self) -> AsyncIterator[dict[str, int]]:
        """While the block runs, each mailbox's greatest depth seen (every 0.25 s); the
        dict keeps the deepest few once the block ends (empty without `depths`)."""
        seen: dict[str, int] = {}

        async def sample() -> None:
            assert self.depths is not None
            while True:
                for name, depth in self.depths().items():
                    seen[name] = max(seen.get(name, 0), depth)
                await trio.sleep(DEPTH_EVERY_S)

        async with trio.open_nursery() as nursery:
            if self.depths is not None:
                nursery.start_soon(sample)
            yield seen
            nursery.cancel_scope.cancel()
        deepest = sorted(seen.items(), key=lambda item: -item[1])[:DEEPEST_SHOWN]
        seen.clear()
        seen.update(deepest)

    def start(self) -> None:
        self._cpu = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self._counted = self.counters() if self.counters is not None else {}

    def per_call(self, calls: int) -> dict[str, Any]:
        """Since `start()`: ms of CPU per call by process (busiest first) and in all, and
        the counters per call."""
        cpu = {
            name: (cpu_seconds(pid) - self._cpu[name]) * 1e3 / calls
            for name, pid in self.pids.items()
        }
        ordered = dict(sorted(cpu.items(), key=lambda item: -item[1]))
        found: dict[str, Any] = {
            "cpu_ms_per_call": {name: round(ms, 2) for name, ms in ordered.items()},
            "cpu_ms_per_call_total": round(sum(cpu.values()), 2),
        }
        if self.counters is not None:
            now = self.counters()
            for key, before in self._counted.items():
                found[f"{key}_per_call"] = round((now[key] - before) / calls, 1)
        return found


def runtime_pids(data_dir: Path) -> dict[str, int]:
    """The supervisor and each actor with a process (apps included), by name."""
    from actors.kernel import control_request

    pids = {"supervisor": int(control_request(data_dir, {"type": "status"})["pid"])}
    for actor in control_request(data_dir, {"type": "actors"})["actors"]:
        if actor["pid"]:
            pids[str(actor["name"])] = int(actor["pid"])
    return pids


def mailbox_depths(data_dir: Path) -> Callable[[], dict[str, int]]:
    """Per actor, the messages in its mailbox not yet handled: stored and waiting, or
    delivered to its process (the supervisor's window) and not yet handled. A delivery held
    after its handler (the transport's, until the AppServer's verdict) is handled: it waits
    on the AppServer, not on the actor."""
    from actors.kernel import control_request

    def depths() -> dict[str, int]:
        actors = control_request(data_dir, {"type": "actors"})["actors"]
        return {
            str(a["name"]): int(a.get("pending", 0))
            + int(a.get("inflight", 0))
            - int(a.get("held", 0))
            for a in actors
        }

    return depths


def supervisor_counters(data_dir: Path) -> Callable[[], dict[str, int]]:
    from actors.kernel import control_request

    def counters() -> dict[str, int]:
        status = control_request(data_dir, {"type": "status"})
        return {"commits": int(status["batches"]), "frames": int(status["frames"])}

    return counters
