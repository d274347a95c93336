"""`python -m bench._supervise --parent PID -- SUPERVISOR ARGS`: the real supervisor,
tied to the bench's life.

It is `python -m supervisor` with one addition: a parent-death signal (SIGTERM, so the
supervisor still stops its actors in order) in case the bench itself is killed. The
supervisor module cannot be edited for the bench, so the bench wraps it.
"""

from __future__ import annotations

import signal
import sys

from ._envelope import die_with_parent


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "--parent" or argv[2] != "--":
        raise SystemExit("usage: python -m bench._supervise --parent PID -- ARGS")
    die_with_parent(int(argv[1]), signal.SIGTERM)
    import supervisor  # after the signal is armed: the import takes a while

    return supervisor.main(argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
