"""The three measured paths, each run to one `Run`: (a) bare, (b) durable relay, (c) kernel.

Every path is timed the same way, by the receiving end: from the `ts` the sender put in
the first envelope to the receiver's clock at the last one (`time.time_ns()` on both
sides, one machine, one clock), and one-way latency per message as arrival minus `ts`.
Process start-up is never inside the window: senders wait for the receivers to say ready.
"""

from __future__ import annotations

import json
import random
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.kernel import ChildSpec, RuntimeConfig, control_request

from ._envelope import percentile
from ._procs import BenchError, Processes

_BARE = "bench._bare"
_ACTORS = "bench._actors"


@dataclass(frozen=True)
class Run:
    count: int
    seconds: float
    latencies_ms: list[float]
    commits: int = 0  # SQLite transactions the durable paths needed for the run

    @property
    def per_commit(self) -> float | None:
        """Messages per transaction: how well group commit grouped (fsyncs are the cost)."""
        return self.count / self.commits if self.commits else None

    @property
    def msgs_per_s(self) -> float:
        return self.count / self.seconds

    def p(self, q: float) -> float:
        return percentile(self.latencies_ms, q)


def _run_from(result: dict[str, Any], expected: int, what: str, commits: int = 0) -> Run:
    if result.get("count") != expected:
        raise BenchError(f"{what}: {result.get('count')} of {expected} messages arrived")
    seconds = (result["last_ns"] - result["first_ts"]) / 1e9
    latencies = [ns / 1e6 for ns in result["latencies"]]
    return Run(expected, max(seconds, 1e-9), latencies, commits)


class BarePaths:
    """(a) and (b): fresh helper processes per run, wired with socketpairs."""

    def __init__(self, procs: Processes, work: Path, *, synchronous: str) -> None:
        self.procs = procs
        self.work = work
        self.synchronous = synchronous
        self.runs = 0

    def _timeout(self, count: int, rate: float) -> float:
        return 60.0 + (count / rate if rate else count / 2000)

    def _start(self, name: str, role: str, socks: list[socket.socket], *args: str) -> Any:
        fds = tuple(sock.fileno() for sock in socks)
        where = ["--fd", str(fds[0])] + (["--down-fd", str(fds[1])] if len(fds) > 1 else [])
        return self.procs.start(f"{name}-{self.runs}", _BARE, [role, *where, *args], pass_fds=fds)

    def socketpair(self, count: int, rate: float = 0.0) -> Run:
        """(a) A → B over one socketpair."""
        self.runs += 1
        common = ("--count", str(count), "--rate", str(rate))
        a, b = socket.socketpair()
        with a, b:  # the children hold their ends; ours close once they are started
            sink = self._start("bare-sink", "sink", [b], *common)
            source = self._start("bare-source", "source", [a], *common)
        result = self.procs.result("bare sink", sink, self._timeout(count, rate))
        self.procs.result("bare source", source, 30.0)
        return _run_from(result, count, "bare socketpair")

    def relay(self, count: int, rate: float = 0.0) -> Run:
        """(b) A → relay → B, the relay persisting with group commit before forwarding."""
        self.runs += 1
        db = self.work / f"relay-{self.runs}.db"
        common = ("--count", str(count), "--rate", str(rate))
        a, r_up = socket.socketpair()
        r_down, b = socket.socketpair()
        with a, r_up, r_down, b:
            sink = self._start("relay-sink", "sink", [b], "--ack", *common)
            relay = self._start(
                "relay", "relay", [r_up, r_down], "--db", str(db), "--synchronous", self.synchronous
            )
            source = self._start("relay-source", "source", [a], *common)
        result = self.procs.result("relay sink", sink, self._timeout(count, rate))
        self.procs.result("relay source", source, 30.0)
        stats = self.procs.result("relay", relay, 60.0)
        for leftover in self.work.glob(f"relay-{self.runs}.db*"):
            leftover.unlink()
        return _run_from(result, count, "durable relay", stats["transactions"])


class KernelPath:
    """(c) a real supervisor process with bench actors, driven through the control socket."""

    def __init__(
        self,
        procs: Processes,
        work: Path,
        *,
        synchronous: str,
        kills: int,
        door: bool = True,
    ) -> None:
        """With `door` off (the bench's own switch) the same actors run without their doors
        and the supervisor checks no sender: what the door costs is the difference."""
        self.procs = procs
        self.name = "supervisor" if door else "supervisor-unchecked"
        self.work = work
        suffix = "" if door else "-u"  # short: the control socket's path has a length limit
        self.data_dir = work / f"runtime{suffix}"
        self.replayer_log = work / f"replayer{suffix}.log"
        self.files = f"{self.name}-"
        self.runs = 0

        def actor(name: str, cls: str, door_name: str, **fields: Any) -> ChildSpec:
            if not door:
                cls, door_name = (
                    {"Sink": "UncheckedSink", "Producer": "UncheckedProducer"}.get(cls, cls),
                    "",
                )
            spec_door = f"{_ACTORS}:{door_name}" if door_name else None
            return ChildSpec(
                name=name, target=f"{_ACTORS}:{cls}", door=spec_door, shutdown=2.0, **fields
            )

        self.config = RuntimeConfig(
            children=[
                actor("sink", "Sink", "SINK_DOOR"),
                actor("producer", "Producer", "PRODUCER_DOOR"),
                actor(
                    "replayer",
                    "Replayer",
                    "REPLAYER_DOOR",
                    config={"log": str(self.replayer_log), "hold_s": 0.001},
                ),
                actor("idle", "Idle", "IDLE_DOOR"),
            ],
            synchronous=synchronous,  # type: ignore[arg-type]
            # Restart intensity and backoff are policy, not mechanism: with them at their
            # defaults, 20 kills in a few seconds would (rightly) escalate or back off.
            max_restarts=2 * kills + 10,
            backoff_base=0.0,
            door_checks=door,
        )

    def start(self, timeout: float = 60.0) -> None:
        config_file = self.work / f"{self.files}runtime.json"
        config_file.write_text(self.config.model_dump_json())
        self.procs.start(
            self.name,
            "bench._supervise",
            ["--", "--data-dir", str(self.data_dir), "--config", str(config_file)],
        )
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self._status()["state"] == "running":
                    return
            except Exception:  # not listening yet; the loop's deadline bounds this
                pass
            if time.monotonic() > deadline:
                raise BenchError(
                    f"the runtime did not start in {timeout:.0f} s{self.procs.tail(self.name)}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        try:
            control_request(self.data_dir, {"type": "stop"})
        except Exception:  # already gone: stop_all reaps whatever is left
            return

    def _send(self, to: str, message_type: str, body: dict[str, Any]) -> None:
        control_request(
            self.data_dir, {"type": "send", "to": to, "message_type": message_type, "body": body}
        )

    def run(self, count: int, rate: float = 0.0) -> Run:
        """Producer → sink through the supervisor's durable mailboxes."""
        self.runs += 1
        out = self.work / f"{self.files}sink-{self.runs}.json"
        body: dict[str, Any] = {"to": "sink", "count": count, "out": str(out)}
        if rate:
            body["rate"] = rate
        batches = self._status()["batches"]
        self._send("producer", "bench.paced" if rate else "bench.burst", body)
        timeout = 120.0 + (count / rate if rate else count / 500)
        deadline = time.monotonic() + timeout
        while not out.exists():  # a stat every 20 ms: nothing the measured path notices
            if time.monotonic() > deadline:
                raise BenchError(
                    f"the kernel path did not deliver {count} messages in"
                    f" {timeout:.0f} s{self.procs.tail(self.name)}"
                )
            time.sleep(0.02)
        result = json.loads(out.read_text())
        out.unlink()
        commits = self._status()["batches"] - batches  # read after the window closed
        return _run_from(result, count, "kernel path", commits)

    def _status(self) -> dict[str, Any]:
        return control_request(self.data_dir, {"type": "status"})

    def actor_pid(self, name: str) -> int:
        for actor in control_request(self.data_dir, {"type": "actors"})["actors"]:
            if actor["name"] == name and actor["pid"]:
                return int(actor["pid"])
        raise BenchError(f"actor {name} has no running process")

    def restarts(self, kills: int, on_kill: Any = None) -> tuple[list[float], int]:
        """Kill the busy replayer `kills` times: ms from each kill to the next incarnation's
        first handled message, and how many of those were replays (attempt > 1)."""
        self._send("producer", "bench.fill", {"to": "replayer", "count": 300 * kills + 1000})
        lines = _Lines(self.replayer_log)
        lines.wait(lambda pid: True)
        restarts: list[float] = []
        replayed = 0
        for _ in range(kills):
            time.sleep(random.uniform(0.05, 0.15))  # kill it somewhere mid-backlog
            killed_at = time.time_ns()
            killed = control_request(self.data_dir, {"type": "kill", "name": "replayer"})["pid"]
            handled_at, attempt = lines.wait(lambda pid, killed=killed: pid != killed)
            restarts.append((handled_at - killed_at) / 1e6)
            replayed += attempt > 1
            if on_kill is not None:
                on_kill()
        return restarts, replayed


class _Lines:
    """The replayer's log: `pid ns attempt`, one line per incarnation's first message."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = ""

    def wait(self, accept: Any, timeout: float = 30.0) -> tuple[int, int]:
        """(ns, attempt) of the first new line whose pid `accept`s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.path.exists():
                with open(self.path) as log:
                    log.seek(self.offset)
                    text = log.read()
                    self.offset = log.tell()
                self.partial += text
                *complete, self.partial = self.partial.split("\n")
                for line in complete:
                    pid, ns, attempt = map(int, line.split())
                    if accept(pid):
                        return ns, attempt
            time.sleep(0.002)
        raise BenchError(f"no replayed message was handled within {timeout:.0f} s")
