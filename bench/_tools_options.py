"""The options of `lineup bench tools`, apart so that `lineup --help` imports nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._options import add_synchronous_argument

DEFAULT_CALLS = 1_000
DEFAULT_UNLOADED = 200
DEFAULT_BURST = 2_000
DEFAULT_IN_FLIGHT = 200
DEFAULT_MCP_CALLS = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object, no table")
    parser.add_argument(
        "--calls",
        metavar="N",
        type=int,
        default=DEFAULT_CALLS,
        help=f"calls per path at 100 calls/s for the round trip (default {DEFAULT_CALLS:,})",
    )
    parser.add_argument(
        "--unloaded",
        metavar="N",
        type=int,
        default=DEFAULT_UNLOADED,
        help="calls per path made one at a time, for the path's own latency"
        f" (default {DEFAULT_UNLOADED})",
    )
    parser.add_argument(
        "--burst",
        metavar="M",
        type=int,
        default=DEFAULT_BURST,
        help=f"calls per path in the throughput burst (default {DEFAULT_BURST:,})",
    )
    parser.add_argument(
        "--in-flight",
        metavar="K",
        type=int,
        default=DEFAULT_IN_FLIGHT,
        help=f"calls open at once in the burst (default {DEFAULT_IN_FLIGHT})",
    )
    parser.add_argument(
        "--mcp-calls",
        metavar="N",
        type=int,
        default=DEFAULT_MCP_CALLS,
        help="calls one at a time through `lineup agent mcp` (c) and through a bare MCP"
        f" server (d) (default {DEFAULT_MCP_CALLS})",
    )
    add_synchronous_argument(parser)
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="where to make the temp dir (default: the system's); keep it on a real disk",
    )


def check_arguments(args: argparse.Namespace) -> str | None:
    for name in ("calls", "unloaded", "burst", "in_flight", "mcp_calls"):
        if getattr(args, name) < 1:
            return f"--{name.replace('_', '-')} must be at least 1"
    return None
