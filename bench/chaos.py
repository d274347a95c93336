"""`lineup bench chaos`: the whole runtime under a mixed workload and faults at random
moments, then an independent check that nothing was lost, repeated or reordered.

The world: a reference AppServer process (`lineup appserver`) and `lineup run --headless
--appserver URL` on a data dir of its own small file system, with the three sample apps
(whiteboard, draw and guess, pomodoro) built, signed, installed and enabled with the real
`lineup app` CLI. The workload, all at once: an agent (in this process) sends messages into
three conversations and calls the apps' tools (idempotent queries and commands that are
not), following each call to its final outcome; a scripted user types messages through the
host's UI socket and opens and closes apps; one app is updated to a second version and
rolled back; once, at the start, the agent asks the whiteboard to save its board as a file
and the user allows it on the consent card while the faults run (`workload.capability`:
`allowed`, or the call's error code). The faults (see `_chaos_faults`) are drawn from
`--seed`.

When `--minutes` are up the faults stop and nothing new starts; every call in flight is
followed to its final, and every accepted message is given time to arrive. Then the
checker compares the agent's and the user's records with the chat timeline and the
AppServer's record: lost, duplicated and reordered messages each way, tool calls with
none or several final outcomes, capability effects in doubt. The command exits 1 if any
count but `in_doubt` is not zero.

With `--power-cuts N`, the faults are power cuts instead (`_chaos_power`): the runtime's
data dir is on the power-cut file system, cut N times at seeded moments; after each cut
every file is checked and, once the runtime is online again, what was acknowledged before
the cut; `power_cuts`, `contract_violations` and `corrupt_files` join the counts.

Everything lives in one fresh temp dir, removed at the end; every process the bench starts
is stopped at the end, on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import random
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import trio
from rich.console import Console

from ._chaos_check import check, in_doubt_effects, read_jsonl
from ._chaos_faults import FaultLog, Injector, schedule
from ._chaos_options import add_arguments, check_arguments
from ._chaos_power import POWER_CUT_APPS, AppOperations, Cutter, plan
from ._chaos_report import print_table, recovery_ms, result_record, with_power_cuts
from ._chaos_workload import CONVERSATIONS, POWER_CUT_CALLS, Workload, finish
from ._chaos_world import (
    UPDATED_APP,
    Bundles,
    FaultyAppServer,
    Runtime,
    SmallDisk,
    build_bundles,
    install_apps,
)
from ._procs import BenchError, Processes
from ._runner import run_checked_bench
from ._tools_app import lineup
from ._trio_run import run_measure, term_as_ctrl_c

FAULTS_PER_MINUTE = 60  # planned; the run's length cuts the plan short
QUIET_S = 180.0  # after the faults: calls to end, messages to arrive


async def _update_and_rollback(runtime: Runtime, bundles: Bundles, ends_at: float) -> None:
    """`lineup app update` to the second version a third into the run, `lineup app
    rollback` at two thirds; each tried again until the runtime takes it (it may be down)."""
    start = trio.current_time()
    third = (ends_at - start) / 3
    steps = (
        ("update", UPDATED_APP, str(bundles.second)),
        ("rollback", UPDATED_APP),
    )
    for n, step in enumerate(steps, 1):
        await trio.sleep_until(start + n * third)
        while True:
            try:
                command = ["app", *step, "--data-dir", str(runtime.data_dir)]
                await trio.to_thread.run_sync(partial(lineup, *command))
                break
            except BenchError:
                if trio.current_time() >= ends_at + QUIET_S / 2:
                    raise
                await trio.sleep(1)


def _appserver_history(appserver_dir: Path, conversation: str) -> dict[str, Any]:
    """`lineup agent history --conversation ID --json`: what the AppServer holds that the
    runtime sent into the conversation."""
    return _lineup_json(
        "agent",
        "history",
        "--appserver-dir",
        str(appserver_dir),
        "--conversation",
        conversation,
    )


def _lineup_json(*args: str) -> dict[str, Any]:
    """`lineup ARGS --json` as the user runs it; its JSON."""
    command = [sys.executable, "-m", "lineup.cli", *args, "--json"]
    done = subprocess.run(command, capture_output=True, timeout=120, check=False)
    if done.returncode != 0:
        raise BenchError(f"lineup {args[0]} {args[1]} failed: {done.stderr.decode()[-300:]}")
    view: dict[str, Any] = json.loads(done.stdout)
    return view


def _chat_history(data_dir: Path, conversation: str) -> dict[str, Any]:
    """`lineup chat history --conversation ID --json`, as the user reads the timeline."""
    return _lineup_json(
        "chat", "history", "--conversation", conversation, "--data-dir", str(data_dir)
    )


def _applied_ns(data_dir: Path) -> list[int]:
    """When the chat app applied each agent message (its event log's `at_ns`)."""
    from apps.chat import app_dir

    db = sqlite3.connect(f"file:{app_dir(data_dir) / 'app.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT at_ns FROM events WHERE kind = 'agent'").fetchall()
    finally:
        db.close()
    return [int(row[0]) for row in rows]


async def _each_conversation(read: Callable[[Path, str], Any], directory: Path) -> dict[str, Any]:
    """`read(directory, conversation)` of every conversation, all at once: each is a
    `lineup` command of its own, mostly its start-up."""
    views: dict[str, Any] = {}

    async def one(conversation: str) -> None:
        views[conversation] = await trio.to_thread.run_sync(read, directory, conversation)

    async with trio.open_nursery() as nursery:
        for conversation in CONVERSATIONS:
            nursery.start_soon(one, conversation)
    return views


async def _check_the_end(
    work: Path, server: FaultyAppServer, runtime: Runtime
) -> tuple[dict[str, Any], list[int]]:
    """Once everything has arrived: the checker's counts over the agent's and the user's
    records, what the chat shows and what the AppServer holds (read once it is stopped);
    and when the chat applied each agent message."""
    chat = await _each_conversation(_chat_history, runtime.data_dir)
    applied = _applied_ns(runtime.data_dir)
    server.stop()
    counts = check(
        agent=read_jsonl(work / "agent.jsonl"),
        ui=read_jsonl(work / "ui.jsonl"),
        chat=chat,
        appserver=await _each_conversation(_appserver_history, server.data_dir),
        in_doubt=in_doubt_effects(runtime.data_dir),
    )
    return counts, applied


async def _delivered(workload: Workload, runtime: Runtime, timeout: float) -> None:
    """Wait until the chat shows as many agent messages as were accepted (or time out: the
    checker then counts what is missing)."""
    deadline = trio.current_time() + timeout
    while trio.current_time() < deadline:
        if len(await trio.to_thread.run_sync(_applied_ns, runtime.data_dir)) >= (
            workload.tally.messages
        ):
            return
        await trio.sleep(0.5)


async def _soak(
    work: Path, procs: Processes, args: argparse.Namespace, err: Console
) -> dict[str, Any]:
    term_as_ctrl_c()
    load_before = os.getloadavg()[0]
    server = FaultyAppServer(procs, work / "as")
    runtime = Runtime(procs, work / "rt", synchronous=args.synchronous)
    # Each clean-up runs even when one before it fails: a mount left behind outlives the run.
    with contextlib.ExitStack() as cleanup:
        disk = SmallDisk.mount(work / "rt", args.minutes)
        if disk is None:
            err.print(
                "cannot make a small file system here (mounting a tmpfs needs root):"
                " running without the disk fault",
                highlight=False,
            )
        else:
            cleanup.callback(disk.unmount)
        cleanup.callback(server.stop)
        cleanup.callback(runtime.stop)
        err.print("building and signing the sample apps with `lineup app`", highlight=False)
        bundles = await trio.to_thread.run_sync(build_bundles, work)
        await server.start()
        credentials = server.credentials()
        runtime.begin(server.url, credentials.runtime_token)
        await runtime.wait_online(120)
        err.print("installing and enabling the sample apps", highlight=False)
        await install_apps(runtime, bundles)
        record = await _drive(work, args, err, World(server, runtime, bundles, disk))
    record["settings"]["loadavg_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return record


@dataclass(frozen=True)
class World:
    server: FaultyAppServer
    runtime: Runtime
    bundles: Bundles
    disk: SmallDisk | None
    faults: bool = True  # `lineup bench soak` runs the workload without them by default
    # A task that runs beside the workload until it ends (the soak's sampler).
    beside: Callable[[], Awaitable[None]] | None = None


async def _drive(
    work: Path, args: argparse.Namespace, err: Console, world: World
) -> dict[str, Any]:
    from peers.agent import open_agent

    server, runtime, disk = world.server, world.runtime, world.disk
    credentials = server.credentials()
    agent_id = credentials.agent_id
    rng = random.Random(args.seed)
    log = FaultLog()
    plan = schedule(
        args.seed, max(1, round(args.minutes * FAULTS_PER_MINUTE)), disk=disk is not None
    )
    async with open_agent(
        server.url,
        agent_id=agent_id,
        token=credentials.token_for_agent(agent_id),
        state_dir=work / "agent",
    ) as agent:
        workload = Workload(agent, runtime.data_dir, work, rng, ends_at=0)
        async with trio.open_nursery() as reading:
            reading.start_soon(workload.recorder.run)
            await workload.open_conversations(120)
            # The save's consent card is open before the faults begin, so they hit while it is.
            await reading.start(workload.capability)
            what = "workload and faults" if world.faults else "workload"
            err.print(f"{args.minutes:g} min of {what}", highlight=False)
            workload.ends_at = trio.current_time() + args.minutes * 60
            injector = Injector(runtime, server, disk, random.Random(args.seed + 1), log)
            async with trio.open_nursery() as nursery:
                for conversation in CONVERSATIONS:
                    nursery.start_soon(workload.talk, conversation)
                nursery.start_soon(workload.calls, nursery)
                nursery.start_soon(workload.type)
                nursery.start_soon(workload.launch_and_close)
                nursery.start_soon(_update_and_rollback, runtime, world.bundles, workload.ends_at)
                if world.faults:
                    nursery.start_soon(injector.run, plan, workload.ends_at)
                if world.beside is not None:
                    reading.start_soon(world.beside)
                await trio.sleep_until(workload.ends_at)
                err.print("faults stopped; waiting for every call and message", highlight=False)
                if not await finish(workload, QUIET_S):
                    # A call with no final by now stays without one: the checker counts it.
                    nursery.cancel_scope.cancel()
            await _delivered(workload, runtime, QUIET_S / 2)
            reading.cancel_scope.cancel()
        workload.close()
    counts, applied = await _check_the_end(work, server, runtime)
    tally = workload.tally
    return result_record(
        settings={
            "minutes": args.minutes,
            "seed": args.seed,
            "disk_fault": disk is not None,
            "synchronous": args.synchronous,
            "date": datetime.date.today().isoformat(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        counts=counts,
        faults=log.by_kind(),
        fault_log=[{"at_ns": f.at_ns, "kind": f.kind, "target": f.target} for f in log.faults],
        recoveries_ms=recovery_ms([(f.at_ns, f.kind) for f in log.faults], applied),
        workload={
            "agent_messages": tally.messages,
            "typed": tally.typed,
            "typed_unanswered": tally.refused_typing,
            "tool_calls_ended": tally.calls,
            "app_launches": tally.launches,
            "capability": tally.capability,
            "consent_answers": tally.cards_answered,
            "problems": tally.problems[:20],
            "skipped_faults": log.skipped,
        },
    )


async def _power_soak(
    work: Path, procs: Processes, args: argparse.Namespace, err: Console
) -> dict[str, Any]:
    """The workload with the runtime's data dir on the power-cut file system, cut
    `--power-cuts` times (`_chaos_power`), then the same quiet end and checker as the
    timed faults'."""
    from .power_cut import PowerCutDisk

    term_as_ctrl_c()
    load_before = os.getloadavg()[0]
    server = FaultyAppServer(procs, work / "as")
    runtime = Runtime(procs, work / "rt", synchronous=args.synchronous)
    disk = PowerCutDisk(work / "disk", runtime.data_dir)
    with contextlib.ExitStack() as cleanup:
        await trio.to_thread.run_sync(disk.mount)
        cleanup.callback(disk.tear_down)
        cleanup.callback(server.stop)
        cleanup.callback(runtime.stop)
        err.print("building and signing the sample apps, starting the runtime", highlight=False)
        built: list[Bundles] = []
        async with trio.open_nursery() as starting:  # the builds run while the runtime starts
            starting.start_soon(_build_into, built, work)
            await server.start()
            runtime.begin(server.url, server.credentials().runtime_token)
            await runtime.wait_online(120)
        err.print("installing and enabling the sample apps", highlight=False)
        await install_apps(runtime, built[0])
        record = await _drive_cuts(work, args, err, World(server, runtime, built[0], None), disk)
    record["settings"]["loadavg_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return record


async def _build_into(built: list[Bundles], work: Path) -> None:
    built.append(await trio.to_thread.run_sync(build_bundles, work, POWER_CUT_APPS))


async def _drive_cuts(
    work: Path, args: argparse.Namespace, err: Console, world: World, disk: Any
) -> dict[str, Any]:
    from peers.agent import open_agent

    server, runtime = world.server, world.runtime
    credentials = server.credentials()
    agent_id = credentials.agent_id
    rng = random.Random(args.seed)
    async with open_agent(
        server.url,
        agent_id=agent_id,
        token=credentials.token_for_agent(agent_id),
        state_dir=work / "agent",
    ) as agent:
        workload = Workload(
            agent, runtime.data_dir, work, rng, ends_at=math.inf, calls=POWER_CUT_CALLS
        )
        say = partial(err.print, highlight=False)
        cutter = Cutter(disk, runtime, workload, AppOperations(runtime, world.bundles), say)
        async with trio.open_nursery() as reading:
            reading.start_soon(workload.recorder.run)
            await workload.open_conversations(120)
            err.print(f"{args.power_cuts} power cuts under the workload", highlight=False)
            async with trio.open_nursery() as nursery:
                for conversation in CONVERSATIONS:
                    nursery.start_soon(workload.talk, conversation)
                nursery.start_soon(workload.calls, nursery)
                nursery.start_soon(workload.type)
                nursery.start_soon(workload.launch_and_close)
                back = await cutter.run(plan(args.seed, args.power_cuts), nursery)
                workload.ends_at = trio.current_time()
                err.print("cuts done; waiting for every call and message", highlight=False)
                if back:
                    # A call with no final by then stays without one: the checker counts it.
                    await finish(workload, QUIET_S)
                nursery.cancel_scope.cancel()  # what is left only waits for its next turn
            if back:
                await _delivered(workload, runtime, QUIET_S / 2)
            reading.cancel_scope.cancel()
        workload.close()
    counts, applied = await _check_the_end(work, server, runtime)
    tally = workload.tally
    cuts = cutter.cuts
    record = result_record(
        settings={
            "minutes": None,
            "power_cuts": args.power_cuts,
            "seed": args.seed,
            "synchronous": args.synchronous,
            "date": datetime.date.today().isoformat(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        counts=counts,
        faults={"power_cut": len(cuts)} if cuts else {},
        fault_log=[{"at_ns": c.at_ns, "kind": "power_cut", "target": c.moment} for c in cuts],
        recoveries_ms=recovery_ms([(c.at_ns, "power_cut") for c in cuts], applied),
        workload={
            "agent_messages": tally.messages,
            "typed": tally.typed,
            "typed_unanswered": tally.refused_typing,
            "tool_calls_ended": tally.calls,
            "app_launches": tally.launches,
            "app_operations_answered": cutter.operations.answered,
            "app_operations": cutter.operations.outcomes,
            "problems": tally.problems[:20],
        },
    )
    return with_power_cuts(record, [cut.as_dict() for cut in cuts])


def run(args: argparse.Namespace) -> int:
    """The `lineup bench chaos` command; 1 when a count that must be zero is not."""

    def measure(work: Path, procs: Processes, err: Console) -> dict[str, Any]:
        return run_measure(_power_soak if args.power_cuts else _soak, work, procs, args, err)

    return run_checked_bench(
        args, problem=check_arguments(args), measure=measure, print_table=print_table
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineup bench chaos", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
