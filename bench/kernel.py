"""`lineup bench kernel`: the kernel's durable actor→actor path beside its bare baselines.

One run measures, on the same machine at the same time: (a) a bare A→B socketpair, (b) a
bare durable relay (SQLite WAL, group commit, forward after commit, batched acks), (c) the
kernel itself: a real supervisor process with a producer and a sink actor behind their
doors, as the runtime's actors are (every sender checked by the supervisor, every body
decoded inside the sink's guard), and (d) the same kernel with the door off, a switch only
the bench uses: (c) / (d) is what the door costs the runtime's own traffic.
Throughputs are medians over interleaved rounds (a, b, c, d, a, b, c, d, ...), so drift
on a shared machine hits all four alike; latency is one-way at a paced
1,000 msg/s; then restart after SIGKILL and the memory of an idle actor. All files live in
one fresh temp dir, removed at the end, and every process started is stopped at the end,
on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from ._envelope import ENVELOPE_BYTES
from ._options import MAX_PACED, PACED_RATE, add_arguments, check_arguments
from ._paths import BarePaths, KernelPath, Run
from ._procs import BenchError, Processes
from ._report import print_table, result_record
from ._runner import run_bench


def _filesystem(path: Path) -> str:
    """The type of the file system `path` is on (ext4, tmpfs, ...), from /proc/self/mounts."""
    best, kind = "", "unknown"
    try:
        with open("/proc/self/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                mount = fields[1]
                inside = str(path) == mount or str(path).startswith(mount.rstrip("/") + "/")
                if inside and len(mount) > len(best):
                    best, kind = mount, fields[2]
    except OSError:
        pass
    return kind


def _memory(pid: int) -> dict[str, float | None]:
    """VmRSS from /proc/PID/status and, when readable, PSS from smaps_rollup, in MiB."""
    rss = pss = None
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1]) / 1024
    except OSError:
        pass
    if rss is None:
        raise BenchError(f"no VmRSS for pid {pid}")
    return {"rss_mib": rss, "pss_mib": pss}


class _Steps:
    """One progress line on stderr: which measurement runs, how far along the run is."""

    def __init__(self, console: Console, total: float) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task = self.progress.add_task("starting", total=total)

    @contextmanager
    def step(self, description: str, weight: float = 1.0) -> Iterator[None]:
        self.progress.update(self.task, description=description)
        yield
        self.progress.advance(self.task, weight)

    def advance(self, amount: float) -> None:
        self.progress.advance(self.task, amount)


def measure(
    args: argparse.Namespace, work: Path, procs: Processes, steps: _Steps
) -> dict[str, Any]:
    sync = args.synchronous
    load_before = os.getloadavg()[0]
    paced_count = args.paced or max(100, min(MAX_PACED, args.messages // 4))
    bare_paths = BarePaths(procs, work, synchronous=sync)
    kernel = KernelPath(procs, work, synchronous=sync, kills=args.kills)
    unchecked = KernelPath(procs, work, synchronous=sync, kills=args.kills, door=False)
    n = args.messages
    with steps.step("(c) and (d) starting the supervisors and their actors"):
        kernel.start()
        unchecked.start()
    bare: list[Run] = []
    relay: list[Run] = []
    kernel_runs: list[Run] = []
    unchecked_runs: list[Run] = []
    try:
        for r in range(1, args.rounds + 1):
            of = f"round {r}/{args.rounds}, {n:,} messages"
            with steps.step(f"(a) bare socketpair throughput, {of}"):
                bare.append(bare_paths.socketpair(n))
            with steps.step(f"(b) durable relay throughput, {of}"):
                relay.append(bare_paths.relay(n))
            with steps.step(f"(c) kernel throughput, {of}"):
                kernel_runs.append(kernel.run(n))
            with steps.step(f"(d) kernel with the door off, throughput, {of}"):
                unchecked_runs.append(unchecked.run(n))
        paced: dict[str, Run] = {}
        at = f"{paced_count:,} messages at {PACED_RATE:,.0f} msg/s"
        with steps.step(f"(a) bare socketpair latency, {at}"):
            paced["bare"] = bare_paths.socketpair(paced_count, PACED_RATE)
        with steps.step(f"(b) durable relay latency, {at}"):
            paced["relay"] = bare_paths.relay(paced_count, PACED_RATE)
        with steps.step(f"(c) kernel latency, {at}"):
            paced["kernel"] = kernel.run(paced_count, PACED_RATE)
        with steps.step(f"(d) kernel with the door off, latency, {at}"):
            paced["unchecked"] = unchecked.run(paced_count, PACED_RATE)
        with steps.step("idle actor memory"):
            memory = _memory(kernel.actor_pid("idle"))
        with steps.step(f"restart after SIGKILL, {args.kills} kills", weight=0):
            restarts, replayed = kernel.restarts(
                args.kills, on_kill=lambda: steps.advance(1 / args.kills)
            )
    finally:
        kernel.stop()
        unchecked.stop()
    settings = {
        "synchronous": sync,
        "messages": n,
        "rounds": args.rounds,
        "paced_messages": paced_count,
        "paced_rate": PACED_RATE,
        "kills": args.kills,
        "envelope_bytes": ENVELOPE_BYTES,
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "filesystem": _filesystem(work),
        # Other work on a shared 2-core machine shows up in every figure; say how much.
        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    return result_record(
        settings=settings,
        bare=bare,
        relay=relay,
        kernel=kernel_runs,
        unchecked=unchecked_runs,
        paced=paced,
        restarts_ms=restarts,
        replayed=replayed,
        memory=memory,
    )


def run(args: argparse.Namespace) -> int:
    """The `lineup bench kernel` command; 0 when it measured, whatever the verdicts."""

    def measure_with_progress(work: Path, procs: Processes, err: Console) -> dict[str, Any]:
        steps = _Steps(err, total=2 + 4 * args.rounds + 4 + 1)
        with steps.progress:
            return measure(args, work, procs, steps)

    return run_bench(
        args,
        problem=check_arguments(args),
        measure=measure_with_progress,
        print_table=print_table,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineup bench kernel", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
