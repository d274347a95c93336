"""`python -m bench._tied --parent PID -- LINEUP ARGS`: a `lineup` command tied to
the bench's life.

It is `lineup ARGS` with a parent-death signal (SIGTERM, so `lineup run` still stops its
actors in order) in case the bench itself is killed; the commands' modules are not edited
for the bench, so the bench wraps them (as `_supervise` wraps the supervisor).
"""

from __future__ import annotations

import signal
import sys

from ._envelope import die_with_parent


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "--parent" or argv[2] != "--":
        raise SystemExit("usage: python -m bench._tied --parent PID -- ARGS")
    die_with_parent(int(argv[1]), signal.SIGTERM)
    from lineup.cli import main as lineup

    return lineup(argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
