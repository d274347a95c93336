"""`python -m lineup.agent send|demo [options]`: the same as `lineup agent send|demo …`."""

from __future__ import annotations

import argparse
import sys

from . import register


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineup")
    commands = parser.add_subparsers(dest="command", required=True)
    register(commands)
    args = parser.parse_args(["agent", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
