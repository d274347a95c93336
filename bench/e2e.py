"""`lineup bench e2e`: agent → chat through the whole runtime, beside a bare WebSocket.

One run measures, each figure for (a) the baseline, the same agent
messages from a reference AppServer to a bare client (`Link`, runtime role) on a plain
WebSocket, and (b) the runtime: `lineup run --headless` on the same kind of AppServer, each
message through transport, router, store and into the chat app's inbox, acknowledged:

- live throughput: a burst from the agent, first send → last arrival;
- one-way latency, agent → chat, at a paced 100 msg/s;
- catch-up: a backlog written into the stopped AppServer's store while the runtime is down,
  from the runtime's reconnect (its `synchronizing`) to the last message in the chat;
- cold start: `lineup run` (embedded AppServer) on a fresh data dir → `online`;
- idle: then, that runtime left alone (from `IDLE_SETTLE_S` after `online`: its start is
  over), the CPU time all its processes use in `--idle-s` seconds as a share of one core
  (`idle_cpu_pct`) and how often their threads wake (`idle_wakeups_per_s`), from the
  scheduler's own count, thread by thread; the same right after the catch-up
  (`idle_after_catchup_*`), which includes the work a catch-up leaves behind it;
- memory: the summed RSS of the runtime's processes (supervisor and actors) after catch-up.

Each path has its own AppServer process with its own store, so neither sees the other's
messages. Everything lives in one fresh temp dir, removed at the end; every process the
bench starts is stopped at the end, on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import trio
from rich.console import Console

from ._e2e_flow import (
    CONVERSATION,
    Arrivals,
    ChatLog,
    open_bare_client,
    open_bench_agent,
    wait_arrivals,
    window,
)
from ._e2e_procs import AppServerProcess, RuntimeProcess, prefill, schedstat_since, wait_for
from ._e2e_report import PACED_RATE, print_table, result_record
from ._options import add_synchronous_argument
from ._procs import Processes
from ._runner import run_bench

DEFAULT_MESSAGES = 5_000
IDLE_SETTLE_S = 5.0  # after `online`, before the idle window: what starting does is done
DEFAULT_PACED = 1_000
DEFAULT_BACKLOG = 100_000
DEFAULT_IDLE_S = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--messages",
        metavar="N",
        type=int,
        default=DEFAULT_MESSAGES,
        help=f"agent messages in the live burst, per path (default {DEFAULT_MESSAGES:,})",
    )
    parser.add_argument(
        "--paced",
        metavar="N",
        type=int,
        default=DEFAULT_PACED,
        help=f"messages per path at {PACED_RATE:g} msg/s for latency (default {DEFAULT_PACED:,})",
    )
    parser.add_argument(
        "--backlog",
        metavar="N",
        type=int,
        default=DEFAULT_BACKLOG,
        help=f"messages waiting while the runtime is down (default {DEFAULT_BACKLOG:,})",
    )
    parser.add_argument(
        "--idle-s",
        metavar="S",
        type=float,
        default=DEFAULT_IDLE_S,
        help="seconds the runtime is left idle after catch-up while its CPU time is counted"
        f" (default {DEFAULT_IDLE_S:g})",
    )
    add_synchronous_argument(parser)
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="where to make the temp dir (default: the system's); keep it on a real disk",
    )


def _check(args: argparse.Namespace) -> str | None:
    for name in ("messages", "paced", "backlog"):
        if getattr(args, name) < 10:
            return f"--{name} must be at least 10"
    if not args.idle_s >= 1:
        return "--idle-s must be at least 1"
    return None


async def _cold_start(procs: Processes, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """`lineup run` with its embedded AppServer on a fresh data dir, up to `online`."""
    runtime = RuntimeProcess(procs, work / "cold", "cold-start")
    runtime.start(options=["--synchronous", args.synchronous])
    try:
        online = await runtime.wait_online()
        memory = runtime.memory()
        # Then nothing to do: the runtime left alone, once what it does as it comes up (its
        # apps' first steps, the first looks of its actors) is over.
        await trio.sleep(IDLE_SETTLE_S)
        idle = await _idle(runtime, args.idle_s)
    finally:
        runtime.stop()
    seconds = online["at_ms"] / 1e3 - runtime.started_ns / 1e9
    return {"seconds": seconds, "memory": memory, "idle": idle}


async def _live(
    server: AppServerProcess, arrivals: Arrivals, wait: Any, args: argparse.Namespace
) -> dict[str, Any]:
    """Warm-up, burst and paced run of the agent into one end (`wait` sees them arrive)."""
    budget = 120 + args.messages / 200 + args.paced / PACED_RATE
    async with open_bench_agent(server.url, server.credentials()) as agent:
        await agent.burst("warm", 1)  # creates the conversation on both sides
        await wait("warm", 1, 60)
        await agent.burst("burst", args.messages)
        await wait("burst", args.messages, budget)
        await agent.paced("paced", args.paced, PACED_RATE)
        await wait("paced", args.paced, budget)
    return {
        "burst": window(arrivals, "burst", args.messages),
        "paced": window(arrivals, "paced", args.paced),
    }


async def _refill(server: AppServerProcess, count: int) -> int:
    """Stop the AppServer, append the backlog to its store, start it again (same port)."""
    credentials = server.credentials()
    server.stop()
    cursor = prefill(
        server.data_dir, conversation_id=CONVERSATION, agent_id=credentials.agent_id, count=count
    )
    await server.start()
    return cursor


async def _baseline(procs: Processes, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    server = AppServerProcess(procs, work / "appserver-a", "appserver-a")
    await server.start()
    try:
        arrivals = Arrivals()
        token = server.credentials().runtime_token

        async def wait(tag: str, count: int, timeout: float) -> None:
            await wait_arrivals(arrivals, tag, count, timeout)

        async with open_bare_client(server.url, token, arrivals):
            result = await _live(server, arrivals, wait, args)
        cursor = await _refill(server, args.backlog)
        start_ns = time.time_ns()
        async with open_bare_client(server.url, token, arrivals, cursor=cursor):
            await wait_arrivals(arrivals, "backlog", args.backlog, 60 + args.backlog / 500)
        result["catchup"] = window(arrivals, "backlog", args.backlog, start_ns=start_ns)
        result["memory"] = _appserver_memory(server)
        return result
    finally:
        server.stop()


def _appserver_memory(server: AppServerProcess) -> dict[str, float]:
    from ._e2e_procs import tree_memory

    assert server.process is not None
    return tree_memory(server.process.pid)


async def _runtime(procs: Processes, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    server = AppServerProcess(procs, work / "appserver-b", "appserver-b")
    # A short name: the control socket's path (DATA_DIR/control.sock) is bounded.
    runtime = RuntimeProcess(procs, work / "rt", "runtime")
    from apps.chat import app_dir

    await server.start()
    try:
        arrivals = Arrivals()
        chat = ChatLog(app_dir(runtime.data_dir), arrivals)
        token = server.credentials().runtime_token
        runtime.start(url=server.url, token=token, options=["--synchronous", args.synchronous])
        await runtime.wait_online()
        result = await _live(server, arrivals, chat.wait, args)
        runtime.stop()
        await _refill(server, args.backlog)
        runtime.start(url=server.url, token=token, options=["--synchronous", args.synchronous])
        reconnected = await _reconnected(runtime)
        await chat.wait("backlog", args.backlog, 120 + args.backlog / 200)
        result["memory"] = runtime.memory()
        # Nothing more comes, but the catch-up leaves work behind it (the WAL copied back,
        # old records pruned): shown beside the idle of a fresh start, not as it.
        result["idle_after_catchup"] = await _idle(runtime, args.idle_s)
        result["catchup"] = window(arrivals, "backlog", args.backlog, start_ns=reconnected)
        result["restart_to_sync_s"] = (reconnected - runtime.started_ns) / 1e9
        return result
    finally:
        runtime.stop()
        server.stop()


async def _idle(runtime: RuntimeProcess, seconds: float) -> dict[str, float]:
    """The CPU time the runtime's processes use in `seconds` with nothing to do, in % of
    one core (`cpu_pct`), and how often their threads wake (`wakeups_per_s`). The window
    is the measurement itself, not a wait for anything."""
    before, began = runtime.schedstat(), time.monotonic()
    await trio.sleep(seconds)
    ran, woke = schedstat_since(before, runtime.schedstat())
    took = time.monotonic() - began
    return {"cpu_pct": ran / took * 100, "wakeups_per_s": woke / took}


async def _reconnected(runtime: RuntimeProcess) -> int:
    """When (ns, the store's clock) this run's transport began syncing: the first record of
    this run at `authenticating` or later. Polled every few ms; `synchronizing` lasts as
    long as the backlog takes to read, so it is not missed."""

    def seen() -> int | None:
        record = runtime.lifecycle()
        if record is None or record["at_ms"] * 1_000_000 < runtime.started_ns:
            return None
        if record["state"] in ("authenticating", "synchronizing", "online"):
            return int(record["at_ms"]) * 1_000_000
        return None

    return await wait_for(seen, 60, "the runtime to reconnect", every=0.005)


async def _measure(work: Path, procs: Processes, args: argparse.Namespace, err: Console) -> Any:
    load_before = os.getloadavg()[0]
    err.print("cold start: lineup run → online", highlight=False)
    cold = await _cold_start(procs, work, args)
    err.print("(a) bare WebSocket: burst, paced, catch-up", highlight=False)
    bare = await _baseline(procs, work, args)
    err.print("(b) runtime: burst, paced, catch-up", highlight=False)
    ours = await _runtime(procs, work, args)
    settings = {
        "messages": args.messages,
        "paced_messages": args.paced,
        "paced_rate": PACED_RATE,
        "backlog": args.backlog,
        "idle_s": args.idle_s,
        "synchronous": args.synchronous,
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    return result_record(settings=settings, cold=cold, bare=bare, ours=ours)


def run(args: argparse.Namespace) -> int:
    """The `lineup bench e2e` command; 0 when it measured, whatever the verdicts."""

    def measure(work: Path, procs: Processes, err: Console) -> dict[str, Any]:
        return trio.run(_measure, work, procs, args, err)

    return run_bench(args, problem=_check(args), measure=measure, print_table=print_table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineup bench e2e", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
