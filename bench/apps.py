"""`lineup bench apps`: app management beside bare baselines from the same run.

The sample app (`apps/pomodoro`) is built and signed with the real `lineup app` CLI into a
fresh temp dir, and a real runtime (`python -m supervisor`, the default children, offline)
runs on a data dir there that trusts the signing key. Each measure runs `--rounds` times:

1. bundle verification: `verify_bundle` in the bench's process, beside the bare minimum
   of its cryptography (the file hashed with SHA-256, one Ed25519 signature checked);
2. install: the `app_manager.request` that `lineup app install` sends through the control
   socket → its operation row `succeeded` (a `remove --yes` between rounds);
3. launch of the isolated app, forked from the app zygote: request → `succeeded` (its
   jailed process is ready; a close between rounds, so each launch starts a process),
   beside a bare fork of an interpreter with the SDK loaded and a fresh interpreter that
   imports the SDK and exits;
4. restart after SIGKILL of the app's process → `running` again with a new pid;
5. memory (RSS, PSS) of the running app's process beside an idle forked actor;
6. launch, restart and memory again on a second runtime whose apps are exec'd (today's
   path without the app zygote), the first one stopped meanwhile.

Everything lives in one temp dir, removed at the end; every process the bench starts is
stopped at the end, on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.status import Status

from ._apps_baselines import (
    SAMPLE_APP,
    Verification,
    bare_exec_ms,
    bare_fork_ms,
    build_signed_sample,
)
from ._apps_options import add_arguments, check_arguments
from ._apps_report import print_table, result_record
from ._apps_runtime import POLL_S, AppsRuntime, process_memory
from ._procs import Processes
from ._runner import run_bench

APP_ACTOR = f"app.{SAMPLE_APP}"
IDLE_ACTOR = "tool_router"  # forked from the zygote, handles nothing while the bench runs
CONVERSATION = "bench"
INSTANCE = f"{SAMPLE_APP}:{CONVERSATION}"


def _installs(
    runtime: AppsRuntime, bundle: Path, rounds: int, status: Status
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"install": [], "remove": []}
    for r in range(1, rounds + 1):
        status.update(f"(2) install, round {r}/{rounds}")
        times["install"].append(runtime.operation("install", bundle=str(bundle)))
        status.update(f"(2) remove --yes, round {r}/{rounds}")
        times["remove"].append(runtime.operation("remove", app_scope=SAMPLE_APP, confirmed=True))
    return times


def _launches(
    runtime: AppsRuntime, rounds: int, status: Status, how: str
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"launch": [], "close": []}
    for r in range(1, rounds + 1):
        status.update(f"launch of the isolated app ({how}), round {r}/{rounds}")
        times["launch"].append(
            runtime.operation("launch", app_scope=SAMPLE_APP, conversation_id=CONVERSATION)
        )
        status.update(f"close ({how}), round {r}/{rounds}")
        times["close"].append(runtime.operation("close", instance_id=INSTANCE))
        runtime.wait_gone(APP_ACTOR)
    return times


def _bare_launches(rounds: int, status: Status) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"bare_exec": [], "bare_fork": []}
    for r in range(1, rounds + 1):
        status.update(f"(3) bare exec and bare fork of an SDK process, round {r}/{rounds}")
        times["bare_exec"].append(bare_exec_ms())
        times["bare_fork"].append(bare_fork_ms())
    return times


def _isolation(runtime: AppsRuntime) -> dict[str, Any]:
    actors = runtime.control({"type": "actors", "stats": True})["actors"]
    app = next(a for a in actors if a["name"] == APP_ACTOR)
    return dict((app.get("statistics") or {}).get("isolation") or {})


def _running_app(runtime: AppsRuntime, rounds: int, status: Status) -> dict[str, Any]:
    """The app launched once more: its isolation, its memory beside an idle actor's, then
    the restarts after SIGKILL."""
    status.update(f"memory of the launched app and of an idle actor ({runtime.app_launch})")
    runtime.operation("launch", app_scope=SAMPLE_APP, conversation_id=CONVERSATION)
    isolation = _isolation(runtime)
    found: dict[str, Any] = {
        "isolation": str(isolation.get("level", "unknown")),
        "launch": str(isolation.get("launch", "unknown")),
        "app_memory": process_memory(runtime.running_pid(APP_ACTOR)),
        "actor_memory": process_memory(runtime.running_pid(IDLE_ACTOR)),
        "restart": [],
    }
    for r in range(1, rounds + 1):
        status.update(f"restart after SIGKILL ({runtime.app_launch}), round {r}/{rounds}")
        found["restart"].append(runtime.restart_after_kill(APP_ACTOR))
    return found


def _ready_to_launch(runtime: AppsRuntime, bundle: Path, status: Status) -> None:
    status.update(f"starting a runtime whose apps are launched by {runtime.app_launch}")
    runtime.start()
    status.update("installing and enabling the app for the launches")
    runtime.operation("install", bundle=str(bundle))
    runtime.operation("enable", app_scope=SAMPLE_APP)


def _verifications(
    verification: Verification, rounds: int, status: Status
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"verify": [], "verify_bare": []}
    verification.ours_ms()  # warm-up of both: first-call imports and the page cache
    verification.bare_ms()
    for r in range(1, rounds + 1):
        status.update(f"(1) bundle verification, round {r}/{rounds}")
        times["verify"].append(verification.ours_ms())
        times["verify_bare"].append(verification.bare_ms())
    return times


def measure(args: argparse.Namespace, work: Path, procs: Processes, err: Console) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    with err.status("building and signing the sample app with `lineup app`") as status:
        sample = build_signed_sample(work)
        rounds = _verifications(Verification(sample), args.rounds, status)
        forked = AppsRuntime(procs, work, sample.public_key, name="rt", app_launch="zygote")
        try:
            status.update("starting a runtime whose apps are forked from the app zygote")
            forked.start()
            rounds.update(_installs(forked, sample.bundle, args.rounds, status))
            status.update("installing and enabling the app for the launches")
            forked.operation("install", bundle=str(sample.bundle))
            forked.operation("enable", app_scope=SAMPLE_APP)
            rounds.update(_launches(forked, args.rounds, status, "forked"))
            app = _running_app(forked, args.rounds, status)
        finally:
            status.update("stopping the runtime")
            forked.stop()
        rounds.update(_bare_launches(args.rounds, status))
        execd = AppsRuntime(procs, work, sample.public_key, name="rx", app_launch="exec")
        try:
            _ready_to_launch(execd, sample.bundle, status)
            exec_launches = _launches(execd, args.rounds, status, "exec'd")
            exec_app = _running_app(execd, args.rounds, status)
        finally:
            status.update("stopping the second runtime")
            execd.stop()
    rounds["launch_exec"] = exec_launches["launch"]
    rounds["restart"] = app["restart"]
    rounds["restart_exec"] = exec_app["restart"]
    settings = {
        "rounds": args.rounds,
        "app_scope": SAMPLE_APP,
        "bundle_bytes": sample.bundle.stat().st_size,
        "app_isolation": app["isolation"],
        "app_launch": app["launch"],
        "app_exec_isolation": exec_app["isolation"],
        "app_exec_launch": exec_app["launch"],
        "actor": IDLE_ACTOR,
        "poll_interval_ms": POLL_S * 1e3,
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        # Other work on a shared machine shows up in every figure; say how much.
        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    return result_record(
        settings=settings,
        rounds_ms=rounds,
        memory={
            "app": app["app_memory"],
            "app_exec": exec_app["app_memory"],
            "actor": app["actor_memory"],
        },
    )


def run(args: argparse.Namespace) -> int:
    """The `lineup bench apps` command; 0 when it measured."""
    return run_bench(
        args,
        problem=check_arguments(args),
        measure=lambda work, procs, err: measure(args, work, procs, err),
        print_table=print_table,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineup bench apps", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
