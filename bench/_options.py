"""The options of `lineup bench kernel`, apart so that `lineup --help` imports nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path

from actors.kernel import RUNTIME_SYNCHRONOUS

DEFAULT_MESSAGES = 30_000
# Single rounds swing by 10-20 % on a shared 2-core machine, the relay's as much as the
# kernel's; the median of five interleaved rounds moves far less from run to run.
DEFAULT_ROUNDS = 5
DEFAULT_KILLS = 20
PACED_RATE = 1000.0
MAX_PACED = 5000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object, no table")
    parser.add_argument(
        "--messages",
        metavar="N",
        type=int,
        default=DEFAULT_MESSAGES,
        help=f"messages per throughput round and path (default {DEFAULT_MESSAGES:,}:"
        " the whole run takes under a minute on 2 cores)",
    )
    parser.add_argument(
        "--rounds",
        metavar="N",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"interleaved throughput rounds, the median is reported (default {DEFAULT_ROUNDS})",
    )
    parser.add_argument(
        "--paced",
        metavar="N",
        type=int,
        default=None,
        help=f"messages per path at {PACED_RATE:,.0f} msg/s for latency"
        f" (default messages/4, at most {MAX_PACED:,})",
    )
    parser.add_argument(
        "--kills",
        metavar="N",
        type=int,
        default=DEFAULT_KILLS,
        help=f"SIGKILLs of a busy actor for the restart time (default {DEFAULT_KILLS})",
    )
    parser.add_argument(
        "--synchronous",
        choices=["FULL", "NORMAL"],
        default="FULL",
        help="SQLite synchronous level for (b) and (c) alike (default FULL: an ack is on disk)",
    )
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="where to make the temp dir (default: the system's); use the disk the"
        " runtime's data dir is on, a tmpfs would make every fsync free",
    )


def add_synchronous_argument(parser: argparse.ArgumentParser) -> None:
    """`--synchronous`, for a bench that starts `lineup run`: the runtime's mailbox, by
    default as `lineup run` has it."""
    parser.add_argument(
        "--synchronous",
        choices=["FULL", "NORMAL"],
        default=RUNTIME_SYNCHRONOUS,
        help="the runtime's mailbox durability (`lineup run --synchronous`): FULL syncs every"
        " commit, NORMAL only before anything leaves the device or tells the user it is done"
        f" (default {RUNTIME_SYNCHRONOUS}, the runtime's)",
    )


def add_work_dir_argument(parser: argparse.ArgumentParser) -> None:
    """`--work-dir`, for a bench that makes its runtime's data dir in a temp dir."""
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="where to make the temp dir (default: the system's)",
    )


def check_arguments(args: argparse.Namespace) -> str | None:
    if args.messages < 100:
        return "--messages must be at least 100"
    if args.rounds < 1:
        return "--rounds must be at least 1"
    if args.kills < 1:
        return "--kills must be at least 1"
    if args.paced is not None and args.paced < 10:
        return "--paced must be at least 10"
    return None
