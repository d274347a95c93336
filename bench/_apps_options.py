"""The options of `lineup bench apps`, apart so that `lineup --help` imports nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_ROUNDS = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object, no table")
    parser.add_argument(
        "--rounds",
        metavar="N",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"rounds of each measure; the median and the max are reported"
        f" (default {DEFAULT_ROUNDS})",
    )
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="where to make the temp dir (default: the system's); keep it on a real disk",
    )


def check_arguments(args: argparse.Namespace) -> str | None:
    if args.rounds < 1:
        return "--rounds must be at least 1"
    return None
