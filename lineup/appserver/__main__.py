"""`python -m lineup.appserver [options]`: the same as `lineup appserver [options]`."""

from __future__ import annotations

import sys

from .._common import run_subcommand
from . import register


def main(argv: list[str] | None = None) -> int:
    return run_subcommand(register, "appserver", argv)


if __name__ == "__main__":
    sys.exit(main())
