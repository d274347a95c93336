"""The options of `lineup bench web`, apart so that `lineup --help` imports nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path

RATE = 50.0  # agent messages a second while the page is timed
DEFAULT_MESSAGES = 500
DEFAULT_LOADS = 10
DEFAULT_LAUNCHES = 5
DEFAULT_RECORDINGS = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object, no table")
    parser.add_argument(
        "--messages",
        metavar="N",
        type=int,
        default=DEFAULT_MESSAGES,
        help=f"agent messages at {RATE:g} msg/s, each timed into the chat app's log and"
        f" into the page (default {DEFAULT_MESSAGES:,})",
    )
    parser.add_argument(
        "--loads",
        metavar="N",
        type=int,
        default=DEFAULT_LOADS,
        help="page loads timed from navigation start to the page's ready mark, on the"
        f" conversation the messages made (default {DEFAULT_LOADS})",
    )
    parser.add_argument(
        "--launches",
        metavar="N",
        type=int,
        default=DEFAULT_LAUNCHES,
        help="times the agent brings the pomodoro in front, each timed onto the page's stage"
        f" beside the runtime's launch (default {DEFAULT_LAUNCHES})",
    )
    parser.add_argument(
        "--recordings",
        metavar="N",
        type=int,
        default=DEFAULT_RECORDINGS,
        help="recordings the page makes for the voice app, each timed from the user's Stop"
        " to the recording kept as its artifact, beside a bare upload of the same bytes"
        f" (default {DEFAULT_RECORDINGS})",
    )
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="where to make the temp dir (default: the system's); keep it on a real disk",
    )


def check_arguments(args: argparse.Namespace) -> str | None:
    for name in ("messages", "loads", "launches", "recordings"):
        if getattr(args, name) < 1:
            return f"--{name} must be at least 1"
    return None
