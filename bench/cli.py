"""`lineup bench cli`: how fast the command line starts, beside a bare Python start.

Each round runs, one after the other, a bare `python -c pass`, `lineup --help` and
`lineup debug status` against an empty data dir (no runtime: the command's whole answer is
"nothing runs there"), each as a fresh process, the way an operator runs them in a loop.
The figures are the medians over the rounds; `help_ratio` is `lineup --help` over the bare
start, whose target is at most 3.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_RUNS = 20
TARGET_HELP_RATIO = 3.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object, no table")
    parser.add_argument(
        "--runs",
        metavar="N",
        type=int,
        default=DEFAULT_RUNS,
        help=f"rounds of the three commands; the figures are medians (default {DEFAULT_RUNS})",
    )


def _lineup() -> list[str]:
    """How a user starts `lineup`: the installed script beside this Python, else the module."""
    script = Path(sys.executable).parent / "lineup"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "lineup.cli"]


def _elapsed_ms(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return (time.perf_counter() - started) * 1000


def measure(runs: int) -> dict[str, float | int | bool]:
    lineup = _lineup()
    with tempfile.TemporaryDirectory(prefix="lineup-bench-cli-") as empty:
        env = {**os.environ, "LINEUP_DATA_DIR": empty, "NO_COLOR": "1"}
        commands = {
            "python": [sys.executable, "-c", "pass"],
            "help": [*lineup, "--help"],
            "status": [*lineup, "debug", "status", "--data-dir", empty],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for argv in commands.values():  # warm the file cache once, unmeasured
            _elapsed_ms(argv, env)
        for _ in range(runs):
            for name, argv in commands.items():
                times[name].append(_elapsed_ms(argv, env))
    medians = {name: statistics.median(values) for name, values in times.items()}
    help_ratio = medians["help"] / medians["python"]
    return {
        "runs": runs,
        "python_ms": round(medians["python"], 1),
        "help_ms": round(medians["help"], 1),
        "status_ms": round(medians["status"], 1),
        "help_ratio": round(help_ratio, 2),
        "status_ratio": round(medians["status"] / medians["python"], 2),
        "target_help_ratio": TARGET_HELP_RATIO,
        "help_meets_target": help_ratio <= TARGET_HELP_RATIO,
    }


def run(args: argparse.Namespace) -> int:
    if args.runs < 1:
        print("lineup bench cli: error: --runs must be at least 1", file=sys.stderr)
        return 2
    record = measure(args.runs)
    if args.json:
        json.dump(record, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    verdict = "meets" if record["help_meets_target"] else "MISSES"
    print(f"command line start, median of {record['runs']} runs each")
    print(f"  python -c pass          {record['python_ms']:8.1f} ms")
    print(
        f"  lineup --help           {record['help_ms']:8.1f} ms  "
        f"{record['help_ratio']:.2f}x python ({verdict} the target of "
        f"{TARGET_HELP_RATIO:.0f}x)"
    )
    print(
        f"  lineup debug status     {record['status_ms']:8.1f} ms  "
        f"{record['status_ratio']:.2f}x python (no runtime in the data dir)"
    )
    return 0
