"""The supervisor's records of its children and of its data dir: a child's state across
incarnations, its restart history (intensity and backoff), and the lock that keeps one
runtime per data dir."""

from __future__ import annotations

import fcntl
import os
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import trio

from .._client import supervisor_pid_alive
from .._specs import ChildSpec
from ..spawning import Incarnation


class RestartHistory:
    """Restarts within the last `period` seconds, for intensity and backoff."""

    def __init__(self, limit: int, period: float) -> None:
        self.limit = limit
        self.period = period
        self.times: deque[float] = deque()

    def record(self, now: float) -> bool:
        """Note a restart; False if it exceeds the intensity (then escalate instead)."""
        self.times.append(now)
        while self.times and now - self.times[0] > self.period:
            self.times.popleft()
        return len(self.times) <= self.limit

    def backoff(self, base: float, cap: float) -> float:
        """0 for the first restart in the period, then base, 2*base, 4*base ... up to cap."""
        n = len(self.times)
        return 0.0 if n <= 1 else min(cap, base * 2 ** (n - 2))


@dataclass
class Child:
    spec: ChildSpec
    history: RestartHistory
    dynamic: bool = False
    state: str = "starting"
    process: Incarnation | None = None
    restarts: int = 0
    started_at: float = field(default_factory=time.monotonic)
    stopping: bool = False
    stop_requested: trio.Event = field(default_factory=trio.Event)  # cuts a backoff short
    kill_requested: bool = False
    last_exit: str = ""
    stopped: trio.Event = field(default_factory=trio.Event)
    stats_waiters: dict[str, tuple[trio.Event, list[dict[str, Any]]]] = field(default_factory=dict)
    on_ready: list[Any] = field(default_factory=list)  # run once at the next ready
    last_heard: float = field(default_factory=time.monotonic)  # when it last said anything
    watchdog_reason: str = ""  # why the watchdog killed this incarnation, if it did
    unresponsive: bool = False  # its heartbeat found it silent past `unresponsive_after`

    def silent_s(self) -> float:
        """Seconds since a running child last said anything (0 unless running)."""
        if self.state != "running" or self.pid is None:
            return 0.0
        return time.monotonic() - self.last_heard

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process and self.process.returncode is None else None


class DataDirInUse(RuntimeError):
    """Another runtime holds the data dir's lock; `pid` is its process when known."""

    def __init__(self, data_dir: Path, pid: int | None) -> None:
        by = f" (pid {pid})" if pid is not None else ""
        super().__init__(f"another runtime{by} is running on {data_dir}")
        self.data_dir = data_dir
        self.pid = pid


def lock_data_dir(data_dir: Path) -> IO[str]:
    """Hold the data dir's lock for the whole run: one runtime per data dir."""
    data_dir.mkdir(parents=True, exist_ok=True)
    # Opened without truncating: the holder's pid in it is what a second runtime reports.
    lock = open(data_dir / "supervisor.lock", "a+")  # noqa: SIM115 (held for the run)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip()
        lock.close()
        raise DataDirInUse(data_dir, int(holder) if holder.isdigit() else None) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock


__all__ = ["Child", "DataDirInUse", "RestartHistory", "lock_data_dir", "supervisor_pid_alive"]
