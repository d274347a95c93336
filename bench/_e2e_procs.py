"""The processes `lineup bench e2e` measures: reference AppServers, `lineup run`, and the
backlog written straight into a stopped AppServer's store.

Every process is started through `Processes`, so every one is stopped at the end. Waits
poll a cheap condition (a file, a row) against a deadline; they never time anything: the
figures come from timestamps the measured processes write themselves.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import trio

from ._procs import BenchError, Processes

T = TypeVar("T")
CHAT_SCOPE = "chat"


async def wait_for(
    predicate: Callable[[], T | None], timeout: float, what: str, *, every: float = 0.01
) -> T:
    """Poll `predicate` until truthy; BenchError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}")
        await trio.sleep(every)


class AppServerProcess:
    """`lineup appserver` in its own process, on a fixed port once it has one."""

    def __init__(self, procs: Processes, data_dir: Path, name: str) -> None:
        self.procs = procs
        self.data_dir = data_dir
        self.name = name
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.options: list[str] = []  # more `lineup appserver` options (its faults)
        self.start_timeout = 30.0

    async def start(self) -> str:
        from peers.appserver import read_endpoint

        args = ["appserver", "--appserver-dir", str(self.data_dir), "--port", str(self.port)]
        process = self.process = self.procs.spawn(self.name, [*args, *self.options])

        def listening() -> str | None:
            if process.poll() is not None:
                raise BenchError(f"{self.name} exited{self.procs.tail(self.name)}")
            endpoint = self.data_dir / "endpoint.json"
            try:
                if json.loads(endpoint.read_text()).get("pid") != process.pid:
                    return None
            except (OSError, ValueError):
                return None
            return read_endpoint(self.data_dir)

        self.url = await wait_for(listening, self.start_timeout, f"{self.name} to listen")
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])  # kept across restarts
        return self.url

    def stop(self) -> None:
        if self.process is not None:
            self.procs.stop(self.process)
            self.process = None

    def credentials(self) -> Any:
        from peers.appserver import read_credentials

        return read_credentials(self.data_dir)


class RuntimeProcess:
    """`lineup run --headless` on its own data dir (embedded AppServer unless `url`)."""

    def __init__(self, procs: Processes, data_dir: Path, name: str) -> None:
        self.procs = procs
        self.data_dir = data_dir
        self.name = name
        self.process: subprocess.Popen[bytes] | None = None
        self.started_ns = 0

    def start(
        self, *, url: str | None = None, token: str | None = None, options: Sequence[str] = ()
    ) -> None:
        from actors import runtime_children
        from actors.runtime_token import write_token

        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = ["run", "--headless", "--data-dir", str(self.data_dir), "--log-level", "WARNING"]
        if url is not None:
            assert token is not None
            write_token(self.data_dir / runtime_children.TOKEN_FILE, token)
            args += ["--appserver", url]
        else:
            args += ["--no-demo-agent"]
        self.started_ns = time.time_ns()
        self.process = self.procs.spawn(self.name, [*args, *options])

    def lifecycle(self) -> dict[str, Any] | None:
        from actors.store import read_lifecycle

        if self.process is not None and self.process.poll() is not None:
            raise BenchError(f"{self.name} exited{self.procs.tail(self.name)}")
        try:
            return read_lifecycle(self.data_dir)
        except sqlite3.Error:  # not created yet, or mid-creation
            return None

    async def wait_online(self, timeout: float = 60) -> dict[str, Any]:
        """The lifecycle record of this run's `online` (its `at_ms` is the store's clock)."""

        def online() -> dict[str, Any] | None:
            record = self.lifecycle()
            if record is None or record["at_ms"] * 1_000_000 < self.started_ns:
                return None  # nothing yet, or the previous run's record
            return record if record["state"] == "online" else None

        return await wait_for(online, timeout, f"{self.name} to be online")

    def stop(self) -> None:
        if self.process is not None:
            self.procs.stop(self.process)
            self.process = None

    def memory(self) -> dict[str, float]:
        """Summed VmRSS and PSS (MiB) of this runtime's process tree, and its size."""
        assert self.process is not None
        return tree_memory(self.process.pid)

    def cpu_s(self) -> float:
        """The CPU time (s) this runtime's process tree has used so far."""
        assert self.process is not None
        return tree_cpu_s(self.process.pid)

    def schedstat(self) -> dict[int, tuple[int, int]]:
        """What this runtime's threads have run so far, per thread (`tree_schedstat`)."""
        assert self.process is not None
        return tree_schedstat(self.process.pid)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # exited while we looked
        ppid = int(text.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(stat.parent.name))
    return tree


def _field_kib(path: str, name: str) -> int:
    try:
        with open(path) as lines:
            for line in lines:
                if line.startswith(name):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(root: int) -> list[int]:
    """`root` and every process under it."""
    tree, pids, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(tree.get(pid, []))
    return pids


def tree_cpu_s(root: int) -> float:
    """The CPU time (user and system, s) the processes of `root`'s tree have used so far."""
    total = 0
    for pid in _tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime: clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def tree_schedstat(root: int) -> dict[int, tuple[int, int]]:
    """What each thread of `root`'s tree has had of the CPU so far, from the scheduler's
    own count (`/proc/PID/task/TID/schedstat`): thread id -> (nanoseconds run, times
    scheduled in, each one a wake-up of a thread that was waiting)."""
    threads: dict[int, tuple[int, int]] = {}
    for pid in _tree(root):
        for task in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            try:
                ran_ns, _, times = task.read_text().split()
            except (OSError, ValueError):  # gone meanwhile
                continue
            threads[int(task.parent.name)] = (int(ran_ns), int(times))
    return threads


def schedstat_since(
    before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]
) -> tuple[float, int]:
    """Seconds run and wake-ups between two `tree_schedstat` counts: per thread, so a
    thread that ended in between (a worker thread let go) takes back nothing."""
    ran, woke = 0, 0
    for tid, (ran_ns, times) in after.items():
        ran_before, times_before = before.get(tid, (0, 0))
        ran, woke = ran + ran_ns - ran_before, woke + times - times_before
    return ran / 1e9, woke


def tree_memory(root: int) -> dict[str, float]:
    pids = _tree(root)
    rss = sum(_field_kib(f"/proc/{pid}/status", "VmRSS:") for pid in pids)
    pss = sum(_field_kib(f"/proc/{pid}/smaps_rollup", "Pss:") for pid in pids)
    return {"rss_mib": rss / 1024, "pss_mib": pss / 1024, "processes": len(pids)}


def prefill(appserver_dir: Path, *, conversation_id: str, agent_id: str, count: int) -> int:
    """Append `count` agent messages to a stopped AppServer's stream; returns the seq before.

    The AppServer's own submit path takes about 2,000 msg/s (one commit per message); a
    100,000-message backlog is written here in one transaction instead, row for row what
    `Store.append` writes (the message stamped with its seq, and its submission's verdict).
    The conversation must already exist (the live phase created it)."""
    from contracts import new_message_id, utc_timestamp
    from peers.appserver import STORE_FILE, Store

    path = appserver_dir / STORE_FILE
    store = Store(path)  # the schema, and where the stream ends
    first = store.last_seq
    known = store.conversation_agent(conversation_id)
    store.close()
    if known != agent_id:
        raise BenchError(f"{conversation_id} is not {agent_id}'s conversation in {path}")
    now = utc_timestamp()
    messages, verdicts = [], []
    for n in range(count):
        seq, message_id = first + 1 + n, new_message_id()
        body = json.dumps(
            {
                "v": 1,
                "id": message_id,
                "type": "lineup.message",
                "timestamp": now,
                "sender": {"kind": "agent", "id": agent_id},
                "target": {"kind": "app", "app_scope": CHAT_SCOPE},
                "scope": {"app_scope": CHAT_SCOPE, "conversation_id": conversation_id},
                "payload": {"text": f"backlog {n} 0", "format": "plain"},
                "correlation": {"sequence": seq},
            },
            separators=(",", ":"),
        )
        size = len(body.encode())
        row = (seq, message_id, conversation_id, agent_id, "agent", agent_id, "lineup.message")
        messages.append((*row, now, body, size))
        verdicts.append((f"agent:{agent_id}", message_id, "accepted", seq, now))
    db = sqlite3.connect(path)
    try:
        with db:
            db.executemany(
                "INSERT INTO messages (seq, message_id, conversation_id, agent_id, sender_kind,"
                " sender_id, type, accepted_at, body, size) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                messages,
            )
            db.executemany(
                "INSERT INTO submissions (peer, idempotency_key, status, seq, decided_at)"
                " VALUES (?, ?, ?, ?, ?)",
                verdicts,
            )
    finally:
        db.close()
    return first
