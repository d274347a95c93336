"""`lineup bench soak`: the chaos bench's workload for a long while, without faults (or
with, `--faults`), sampling every 10 s the data dir's size by part, the user data the
workload added (the conversation's messages and the artifacts) and each process's RSS.

Its keys: `data_dir_mib_start`, `data_dir_mib_end`, `growth_mib_per_hour_after_warmup`
beside `user_data_mib_per_hour_after_warmup`, per part and per process
(`rss_growth_mib_per_hour`), each a least-squares slope over the samples after the
warm-up; and the user data as the runtime keeps it (`kept_user_data_*`: the
conversation's tables with their indexes, the apps' logs of it, the artifacts) beside the
rest of the data dir (`rest_mib_per_hour_after_warmup`), which is what a bound levels off.
The targets: after the warm-up the data dir grows no faster than the user data as kept
(the rest of it levels off, within 1 MiB an hour), and no process's RSS (of those that
lived through the run) by more than 5 MiB an hour. The chaos bench's checker runs at the
end as well: the command exits 1 if anything was lost, repeated or reordered.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import trio
from rich.console import Console
from rich.table import Table

from ._chaos_report import print_table as print_chaos_table
from ._chaos_world import FaultyAppServer, Runtime, SmallDisk, build_bundles, install_apps
from ._procs import Processes
from ._runner import run_checked_bench
from ._soak_options import add_arguments, check_arguments
from ._soak_sample import Sampler, process_label, soak_figures
from ._trio_run import run_measure, term_as_ctrl_c
from .chaos import World, _drive

# The data dir grows no faster than the user data as the runtime keeps it: the rest of it
# levels off (within this, a slope's noise).
REST_TOLERANCE_MIB_PER_HOUR = 1.0
RSS_TARGET_MIB_PER_HOUR = 5.0


def _processes(runtime: Runtime) -> dict[str, int]:
    """The runtime's live processes by name: actors by theirs, the supervisor (the root
    `lineup run`), and by their parent the rest (the zygotes the actors fork from)."""
    names = {int(a["pid"]): str(a["name"]) for a in runtime.actors() if a.get("pid")}
    supervisor = int((runtime.status() or {}).get("pid") or 0)
    found = {}
    for pid in runtime.leftovers():
        if pid in names:
            found[names[pid]] = pid
        elif pid == supervisor:
            found["supervisor"] = pid
        else:
            found[process_label(pid, supervisor)] = pid
    return found


def _verdicts(figures: dict[str, Any]) -> list[str]:
    """What missed its target, in words."""
    missed = []
    growth = figures.get("growth_mib_per_hour_after_warmup")
    user = figures.get("kept_user_data_mib_per_hour_after_warmup")
    if user is None:  # SQLite without `dbstat`: the user data by the workload's bytes
        user = figures.get("user_data_mib_per_hour_after_warmup") or 0.0
    if growth is not None and growth > user + REST_TOLERANCE_MIB_PER_HOUR:
        missed.append(f"the data dir grew {growth:g} MiB/h, the user data {user:g} MiB/h")
    for name, rate in figures.get("rss_growth_mib_per_hour", {}).items():
        if rate is not None and rate > RSS_TARGET_MIB_PER_HOUR:
            missed.append(f"{name}'s RSS grew {rate:g} MiB/h")
    return missed


async def _soak(
    work: Path, procs: Processes, args: argparse.Namespace, err: Console
) -> dict[str, Any]:
    term_as_ctrl_c()
    load_before = os.getloadavg()
    server = FaultyAppServer(procs, work / "as")
    runtime = Runtime(procs, work / "rt", synchronous=args.synchronous)
    with contextlib.ExitStack() as cleanup:
        disk = SmallDisk.mount(work / "rt", args.minutes) if args.faults else None
        if disk is not None:
            cleanup.callback(disk.unmount)
        cleanup.callback(server.stop)
        cleanup.callback(runtime.stop)
        err.print("building and signing the sample apps with `lineup app`", highlight=False)
        bundles = await trio.to_thread.run_sync(build_bundles, work)
        await server.start()
        runtime.begin(server.url, server.credentials().runtime_token)
        await runtime.wait_online(120)
        err.print("installing and enabling the sample apps", highlight=False)
        await install_apps(runtime, bundles)
        sampler = Sampler(runtime.data_dir, args.minutes, lambda: _processes(runtime))
        world = World(server, runtime, bundles, disk, faults=args.faults, beside=sampler.run)
        record = await _drive(work, args, err, world)
    figures = soak_figures(sampler.samples, args.minutes)
    load_after = os.getloadavg()
    record["settings"].update(
        faults=args.faults,
        loadavg=[round(x, 2) for x in load_before],
        loadavg_end=[round(x, 2) for x in load_after],
    )
    record.update(figures)
    record["targets_missed"] = _verdicts(figures)
    return record


def print_table(record: dict[str, Any], console: Console) -> None:
    print_chaos_table(record, console)
    console.print(
        f"data dir: {record['data_dir_mib_start']} MiB at the start,"
        f" {record['data_dir_mib_end']} MiB at the end; after a warm-up of"
        f" {record['warmup_s']:g} s it grew {record['growth_mib_per_hour_after_warmup']} MiB"
        f" an hour, the user data {record['user_data_mib_per_hour_after_warmup']} MiB an hour",
        highlight=False,
    )
    console.print(
        f"the user data as kept (the conversation's tables, the apps' logs of it, the"
        f" artifacts): {record['kept_user_data_mib_end']} MiB at the end, growing"
        f" {record['kept_user_data_mib_per_hour_after_warmup']} MiB an hour; the rest of the"
        f" data dir {record['rest_mib_per_hour_after_warmup']} MiB an hour",
        highlight=False,
    )
    parts = Table("part", "MiB at the end", "MiB an hour", title="the data dir by part")
    for part, size in record["parts_mib_end"].items():
        parts.add_row(part, f"{size}", f"{record['parts_growth_mib_per_hour_after_warmup'][part]}")
    console.print(parts)
    rss = Table("process", "RSS MiB at the end", "MiB an hour", title="memory")
    for name, size in record["rss_mib_end"].items():
        rss.add_row(name, f"{size}", f"{record['rss_growth_mib_per_hour'][name]}")
    console.print(rss)
    for missed in record["targets_missed"]:
        console.print(f"[yellow]target missed:[/yellow] {missed}", highlight=False)


def run(args: argparse.Namespace) -> int:
    """The `lineup bench soak` command; 1 when the checker found something lost or
    repeated."""

    def measure(work: Path, procs: Processes, err: Console) -> dict[str, Any]:
        return run_measure(_soak, work, procs, args, err)

    return run_checked_bench(
        args, problem=check_arguments(args), measure=measure, print_table=print_table
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineup bench soak", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
