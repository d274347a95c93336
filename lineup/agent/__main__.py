"""`python -m lineup.agent send|demo [options]`: the same as `lineup agent send|demo …`."""

from __future__ import annotations

import sys

from .._common import run_subcommand
from . import register


def main(argv: list[str] | None = None) -> int:
    return run_subcommand(register, "agent", argv)


if __name__ == "__main__":
    sys.exit(main())
