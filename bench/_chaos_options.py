"""The options of `lineup bench chaos`, apart so that `lineup --help` imports nothing heavy."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil

from ._options import add_synchronous_argument, add_work_dir_argument

DEFAULT_MINUTES = 1.0
DEFAULT_SEED = 1
MAX_POWER_CUTS = 10_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object, no table")
    parser.add_argument(
        "--minutes",
        metavar="N",
        type=float,
        default=DEFAULT_MINUTES,
        help="how long the workload runs under faults, before the quiet end in which"
        f" everything still in flight is delivered (default {DEFAULT_MINUTES:g}; with"
        " --power-cuts, the cuts set the length)",
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
        "--power-cuts",
        metavar="N",
        type=int,
        default=0,
        help="instead of the timed faults, cut the power N times under the workload, at"
        " moments drawn from the seed (mid-commit, mid-install, mid-artifact), and check"
        " every file and the durability contract after each restart; the data dir is then"
        " on a FUSE file system that loses what no fsync reached, which needs root and"
        " pyfuse3 (pip install 'lineup-runtime[power-cut]')",
    )
    add_synchronous_argument(parser)
    add_work_dir_argument(parser)


def check_arguments(args: argparse.Namespace) -> str | None:
    if not 0.25 <= args.minutes <= 24 * 60:
        return "--minutes must be between 0.25 and 1440"
    if args.power_cuts:
        return _power_cut_problem(args.power_cuts)
    return None


def _power_cut_problem(cuts: int) -> str | None:
    """Why `--power-cuts` cannot run here, as one sentence, or None."""
    if not 1 <= cuts <= MAX_POWER_CUTS:
        return f"--power-cuts must be between 1 and {MAX_POWER_CUTS:,}"
    if os.geteuid() != 0:
        return (
            "--power-cuts mounts a FUSE file system under the data dir, which needs root:"
            " run the bench as root"
        )
    if importlib.util.find_spec("pyfuse3") is None or shutil.which("fusermount3") is None:
        return (
            "--power-cuts needs pyfuse3 and fusermount3: install Debian's fuse3 and"
            " libfuse3-dev, then pip install 'lineup-runtime[power-cut]'"
        )
    return None
