"""The options of `lineup bench soak`, apart so that `lineup --help` imports nothing heavy."""

from __future__ import annotations

import argparse

from ._options import add_synchronous_argument, add_work_dir_argument

DEFAULT_MINUTES = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object, no table")
    parser.add_argument(
        "--minutes",
        metavar="N",
        type=float,
        default=DEFAULT_MINUTES,
        help=f"how long the workload runs (default {DEFAULT_MINUTES:g}); the rates are"
        " fitted after a warm-up of ten minutes, or of the first quarter of a shorter run",
    )
    parser.add_argument(
        "--faults",
        action="store_true",
        help="inject the chaos bench's faults too (kills, stops, restarts, a full disk)",
    )
    parser.add_argument(
        "--seed",
        metavar="S",
        type=int,
        default=1,
        help="the seed of the workload's choices and of the faults (default 1)",
    )
    add_synchronous_argument(parser)
    add_work_dir_argument(parser)


def check_arguments(args: argparse.Namespace) -> str | None:
    if not 1 <= args.minutes <= 7 * 24 * 60:
        return "--minutes must be between 1 and 10080 (a week)"
    return None
