"""The options of `lineup bench speech`, apart so that `lineup --help` imports nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_ROUNDS = 5
DEFAULT_TEXT = "start a focus timer for twenty five minutes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object, no table")
    parser.add_argument(
        "--rounds",
        metavar="N",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"transcriptions each way; the figures are medians (default {DEFAULT_ROUNDS})",
    )
    parser.add_argument(
        "--text",
        default=DEFAULT_TEXT,
        help=f"what is spoken, then transcribed (default {DEFAULT_TEXT!r})",
    )
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="where to make the temp dir (default: the system's)",
    )
