"""The options of `lineup bench chaos`, apart so that `lineup --help` imports nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_MINUTES = 1.0
DEFAULT_SEED = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object, no table")
    parser.add_argument(
        "--minutes",
        metavar="N",
        type=float,
        default=DEFAULT_MINUTES,
        help="how long the workload runs under faults, before the quiet end in which"
        f" everything still in flight is delivered (default {DEFAULT_MINUTES:g})",
    )
    parser.add_argument(
        "--seed",
        metavar="S",
        type=int,
        default=DEFAULT_SEED,
        help="the seed of the schedule of faults and of the workload's choices; the same"
        f" seed gives the same schedule (default {DEFAULT_SEED})",
    )
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="where to make the temp dir (default: the system's)",
    )


def check_arguments(args: argparse.Namespace) -> str | None:
    if not 0.25 <= args.minutes <= 24 * 60:
        return "--minutes must be between 0.25 and 1440"
    return None
