"""What every `lineup bench` command does around its measurement: a fresh temp dir, every
process it starts stopped and the dir removed at the end (also on Ctrl-C or SIGTERM), and
the record printed as a table or as JSON."""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from ._procs import BenchError, Processes

Measure = Callable[[Path, Processes, Console], dict[str, Any]]


def run_bench(
    args: argparse.Namespace,
    *,
    problem: str | None,
    measure: Measure,
    print_table: Callable[[dict[str, Any], Console], None],
) -> int:
    """0 when it measured, whatever the verdicts; 1 when measuring failed; 2 for bad
    options (`problem`); 130 when interrupted."""
    err = Console(stderr=True)
    if problem:
        err.print(f"[red]error:[/red] {problem}")
        return 2
    work = Path(tempfile.mkdtemp(prefix="lineup-bench-", dir=args.work_dir))
    procs = Processes(work / "logs")
    previous = signal.signal(signal.SIGTERM, _interrupt)  # cleaned up like a Ctrl-C
    interrupted = False
    try:
        record = measure(work, procs, err)
    except BenchError as exc:
        err.print(f"[red]bench failed:[/red] {exc}", highlight=False)
        return 1
    except KeyboardInterrupt:
        interrupted = True
    finally:
        impatient = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a 2nd Ctrl-C: still clean
        try:
            procs.stop_all()
            shutil.rmtree(work, ignore_errors=True)
        finally:
            signal.signal(signal.SIGINT, impatient)
            signal.signal(signal.SIGTERM, previous)
    if interrupted:
        err.print("interrupted; every process the bench started is stopped")
        return 130
    if args.json:
        json.dump(record, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_table(record, Console())
    return 0


def run_checked_bench(
    args: argparse.Namespace,
    *,
    problem: str | None,
    measure: Measure,
    print_table: Callable[[dict[str, Any], Console], None],
) -> int:
    """`run_bench` for a bench whose record carries its checker's findings (`failed`):
    1 when the checker found something, though the measurement itself went through."""
    records: list[dict[str, Any]] = []

    def kept(work: Path, procs: Processes, err: Console) -> dict[str, Any]:
        record = measure(work, procs, err)
        records.append(record)
        return record

    code = run_bench(args, problem=problem, measure=kept, print_table=print_table)
    if code == 0 and records and records[0]["failed"]:
        return 1
    return code


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
