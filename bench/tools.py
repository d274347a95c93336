"""`lineup bench tools`: an agent's tool calls through the whole runtime, beside a bare
WebSocket round trip through the same kind of AppServer, in the same run.

(b) the runtime: `lineup run --headless --appserver URL` with its own reference AppServer
process (`lineup appserver`). A freshly generated key is trusted (`DATA_DIR/trusted_keys/`),
the bench's app (`bench/toolapp`: one trivial, idempotent query tool, `bench.echo`) is built,
signed, installed and enabled with the real `lineup app` CLI, the agent sends one message to
associate the conversation, waits for the inventory that lists the tool and warms the app
up with one call (which launches it). Each call then goes agent → AppServer → transport →
router → store → tool router → the app's process → tool router → transport → AppServer →
agent, its receipts with it.

(a) the baseline: the same agent code on another AppServer process (so neither path sees
the other's messages), whose far end is a bare `Link` in the runtime role that answers each
`lineup.tool.invoke` at once with one `lineup.tool.result`: agent → AppServer → bare client
→ AppServer → agent, with nothing stored or checked on the far side.

Measured on each path: (1) the round trip of a call (`AgentClient.call` → its final) at a
paced 100 calls/s, p50 and p99; (2) a burst of calls with a bounded number in flight, calls/s
from the first submit to the last final; (3) the round trip of calls made one at a time, the
path's own latency with nothing queued. For (b), the steps the tool router recorded in each
call's history (`read_tool_calls`), the CPU each process spent per call (and the runtime's
own processes' together), the supervisor's commits per call and the process hops of one
call (`_tools_hops`) say where the time goes.

Everything lives in one fresh temp dir, removed at the end; every process the bench starts
is stopped at the end, on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
from rich.console import Console

from ._e2e_procs import AppServerProcess, RuntimeProcess
from ._procs import BenchError, Processes
from ._runner import run_bench
from ._tools_app import SignedApp, build_signed_app, lineup
from ._tools_cpu import Meter, mailbox_depths, runtime_pids, supervisor_counters
from ._tools_flow import (
    CONVERSATION,
    PACED_RATE,
    Caller,
    Timed,
    open_bare_answerer,
    open_bench_agent,
    wait_until,
    within,
)
from ._tools_hops import call_hops
from ._tools_mcp import measure_mcp, require_mcp
from ._tools_options import add_arguments, check_arguments
from ._tools_report import call_steps, print_table, result_record
from ._trio_run import run_measure, term_as_ctrl_c
from .toolapp import APP_SCOPE, METHOD


def _budget(args: argparse.Namespace) -> float:
    """A hang guard for one batch of calls, never a speed check."""
    return float(120 + args.calls / PACED_RATE + (args.unloaded + args.burst) / 20)


async def _warm_up(caller: Caller, name: str) -> Timed:
    """One call before anything is timed (in the runtime, it launches the app)."""
    warm: Timed = await within(60, f"{name}: the warm-up call", caller.one)
    if not warm.ok:
        raise BenchError(f"{name}: the warm-up call ended {warm.final_type}")
    return warm


async def _measure_path(
    caller: Caller,
    warm: Timed,
    meter: Meter,
    args: argparse.Namespace,
    err: Console,
    *,
    name: str,
    hops_of: Callable[[str], list[str]] | None = None,
) -> dict[str, Any]:
    """The unloaded calls, the paced calls and the burst, each timed; what the unloaded
    calls and the burst cost each process; with `hops_of`, the hops of the last unloaded
    call, read before the paced calls (the mailbox keeps only its newest done messages)."""
    budget = _budget(args)
    err.print(f"{name}: {args.unloaded:,} calls one at a time", highlight=False)
    meter.start()
    unloaded = await within(budget, f"{name}: the unloaded calls", caller.sequential, args.unloaded)
    unloaded_cost = meter.per_call(args.unloaded)
    hops = hops_of(unloaded.calls[-1].call_id) if hops_of is not None else []
    err.print(f"{name}: {args.calls:,} calls at {PACED_RATE:g}/s", highlight=False)
    async with meter.deepest() as paced_mailboxes:
        paced = await within(budget, f"{name}: the paced calls", caller.paced, args.calls)
    err.print(f"{name}: burst of {args.burst:,}, {args.in_flight} in flight", highlight=False)
    meter.start()
    async with meter.deepest() as burst_mailboxes:
        burst = await within(budget, f"{name}: the burst", caller.burst, args.burst, args.in_flight)
    return {
        "paced_mailboxes": paced_mailboxes,
        "burst_mailboxes": burst_mailboxes,
        "warm_ms": warm.round_trip_ms,
        "unloaded": unloaded,
        "paced": paced,
        "burst": burst,
        "unloaded_cost": unloaded_cost,
        "burst_cost": meter.per_call(args.burst),
        "hops": hops,
    }


async def _baseline(procs: Processes, work: Path, args: argparse.Namespace, err: Console) -> Any:
    server = AppServerProcess(procs, work / "appserver-a", "appserver-a")
    await server.start()
    try:
        credentials = server.credentials()
        async with (
            open_bare_answerer(server.url, credentials.runtime_token, APP_SCOPE),
            open_bench_agent(server.url, credentials) as agent,
        ):
            await agent.send_text(CONVERSATION, "hello")  # creates the conversation
            caller = Caller(agent, METHOD, app_scope=APP_SCOPE, revision="1")
            name = "(a) bare WebSocket"
            warm = await _warm_up(caller, name)
            assert server.process is not None
            pids = {"appserver": server.process.pid, "bench (agent, bare client)": os.getpid()}
            return await _measure_path(caller, warm, Meter(pids), args, err, name=name)
    finally:
        server.stop()


async def _install(runtime: RuntimeProcess, app: SignedApp) -> None:
    """`lineup app install` and `enable`, as a user runs them against the running runtime."""
    data_dir = ("--data-dir", runtime.data_dir)
    await trio.to_thread.run_sync(lineup, "app", "install", app.bundle, *data_dir)
    await trio.to_thread.run_sync(lineup, "app", "enable", APP_SCOPE, *data_dir)


def _listed(agent: Any) -> bool:
    inventory = agent.inventory(CONVERSATION)
    return inventory is not None and any(t.method == METHOD for t in inventory.tools)


async def _runtime(
    procs: Processes, work: Path, app: SignedApp, args: argparse.Namespace, err: Console
) -> Any:
    server = AppServerProcess(procs, work / "appserver-b", "appserver-b")
    # A short name: the control socket's path (DATA_DIR/control.sock) is bounded.
    runtime = RuntimeProcess(procs, work / "rt", "runtime")
    await server.start()
    try:
        credentials = server.credentials()
        trusted = runtime.data_dir / "trusted_keys"
        trusted.mkdir(parents=True)
        shutil.copy(app.public_key, trusted / app.public_key.name)
        runtime.start(
            url=server.url,
            token=credentials.runtime_token,
            options=["--synchronous", args.synchronous],
        )
        await runtime.wait_online()
        err.print("(b) runtime: installing and enabling the bench's app", highlight=False)
        await _install(runtime, app)
        async with open_bench_agent(server.url, credentials) as agent:
            await agent.send_text(CONVERSATION, "hello")  # associates the conversation
            await wait_until(lambda: _listed(agent), 60, f"an inventory listing {METHOD}")
            caller = Caller(agent, METHOD, app_scope=None, revision=None)
            warm = await _warm_up(caller, "(b) runtime")
            assert server.process is not None
            pids = {
                **runtime_pids(runtime.data_dir),
                "appserver": server.process.pid,
                "bench (agent)": os.getpid(),
            }
            meter = Meter(
                pids, supervisor_counters(runtime.data_dir), mailbox_depths(runtime.data_dir)
            )
            # With the hops of the last call made one at a time, from the mailbox's records.
            result = await _measure_path(
                caller,
                warm,
                meter,
                args,
                err,
                name="(b) runtime",
                hops_of=lambda call_id: call_hops(runtime.data_dir, call_id),
            )
            err.print(
                f"(c) MCP bridge, (b) and (d) bare MCP: {args.mcp_calls:,} calls one at a time"
                " each, in turn",
                highlight=False,
            )
            result["mcp"] = await within(
                _budget(args) + args.mcp_calls,
                "(c) and (d)",
                measure_mcp,
                caller,
                server.url,
                server.data_dir,
                work,
                args.mcp_calls,
            )
        result["steps"] = {
            batch: call_steps(runtime.data_dir, result[batch]) for batch in ("unloaded", "paced")
        }
        return result
    finally:
        runtime.stop()
        server.stop()


async def _measure(
    work: Path, procs: Processes, args: argparse.Namespace, err: Console
) -> dict[str, Any]:
    term_as_ctrl_c()
    require_mcp()
    load_before = os.getloadavg()[0]
    err.print("building and signing the bench's app with `lineup app`", highlight=False)
    app = await trio.to_thread.run_sync(build_signed_app, work)
    bare = await _baseline(procs, work, args, err)
    ours = await _runtime(procs, work, app, args, err)
    settings = {
        "calls": args.calls,
        "unloaded_calls": args.unloaded,
        "paced_rate": PACED_RATE,
        "burst": args.burst,
        "in_flight": args.in_flight,
        "mcp_calls": args.mcp_calls,
        "synchronous": args.synchronous,
        "app_scope": APP_SCOPE,
        "method": METHOD,
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        # Other work on a shared machine shows up in every figure; say how much.
        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    return result_record(settings=settings, bare=bare, ours=ours)


def run(args: argparse.Namespace) -> int:
    """The `lineup bench tools` command; 0 when it measured, whatever the verdicts."""

    def measure(work: Path, procs: Processes, err: Console) -> dict[str, Any]:
        return run_measure(_measure, work, procs, args, err)

    return run_bench(args, problem=check_arguments(args), measure=measure, print_table=print_table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineup bench tools", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
