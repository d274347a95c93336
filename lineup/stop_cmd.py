"""`lineup stop`: stop the runtime on a data dir, however it was started, and wait until
it has stopped.

The runtime is asked on its control socket, so it stops as Ctrl-C stops it: the actors in
reverse start order, each handing back what it had not finished. A runtime that does not
answer there is sent SIGTERM, which takes the same path. Stopping when none runs is no
error: the data dir is then as the command leaves it.

It returns once the process holding `supervisor.lock` has ended, so the data dir is free
when it returns; SIGTERM goes to that holder when the control socket does not answer (a
runtime still starting). With none running it says so and exits 0. A terminal chat that
started the runtime (`lineup run` on a terminal) ends with it: the runtime is its child,
and its exit interrupts the chat's wait for the next line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from ._common import add_data_dir, data_dir_of, fail, lock_holder, positive_int, print_json

POLL_S = 0.05


def register(subparsers: Any) -> None:
    stop = subparsers.add_parser(
        "stop",
        help="stop the runtime on the data dir and wait until it has stopped",
        description="Stop the runtime on the data dir (started with `lineup run`, with or"
        " without --headless) as Ctrl-C would, and wait until its process has ended. Says so"
        " when none runs there.",
    )
    add_data_dir(stop)
    stop.add_argument(
        "--timeout",
        type=positive_int,
        default=60,
        metavar="S",
        help="how long to wait for it to stop, in seconds (default 60)",
    )
    stop.add_argument("--json", action="store_true", help="print the outcome as JSON")
    stop.set_defaults(func=_stop)


def runtime_pid(data_dir: Path) -> int | None:
    """The pid of the process holding the data dir's runtime lock (None when unknown)."""
    lock = data_dir / "supervisor.lock"
    pid = lock_holder(lock)
    if pid is None:  # the runtime writes its pid into its lock file as well
        try:
            written = lock.read_text().strip()
        except OSError:
            return None
        pid = int(written) if written.isdigit() else None
    return pid


def _ended(pid: int) -> bool:
    """True once `pid` has exited: every thread of it gone or a zombie (a zombie left for
    its parent to reap counts as ended). Its first thread shows as a zombie while the
    others are still being torn down, so one thread's state is not enough."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        if state not in ("Z", "X"):
            return False
    return True


def _stop(args: argparse.Namespace) -> int:
    from actors.kernel import ControlError, control_request, supervisor_pid_alive

    data_dir = data_dir_of(args)
    if not supervisor_pid_alive(data_dir):
        return _said(
            args,
            {"stopped": False, "running": False, "pid": None},
            f"no runtime is running on {data_dir}; nothing to stop",
        )
    pid = runtime_pid(data_dir)
    asked = "control socket"
    try:
        control_request(data_dir, {"type": "stop"}, timeout=min(5, args.timeout))
    except ControlError:  # a runtime still starting, or one that does not answer: the signal
        if pid is None:
            return fail(
                f"the runtime on {data_dir} does not answer and its process is unknown; find it"
                " with `ps` and stop it with `kill`"
            )
        asked = "SIGTERM"
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    if not args.json:
        print(f"stopping the runtime on {data_dir} (pid {pid}) …", file=sys.stderr, flush=True)
    started = time.monotonic()
    deadline = started + args.timeout
    while supervisor_pid_alive(data_dir) or (pid is not None and not _ended(pid)):
        if time.monotonic() > deadline:
            return fail(
                f"the runtime on {data_dir} (pid {pid}) did not stop within {args.timeout} s;"
                f" see {data_dir}/logs/, or end it with `kill -9 {pid}`"
            )
        time.sleep(POLL_S)
    took = time.monotonic() - started
    return _said(
        args,
        {
            "stopped": True,
            "running": False,
            "pid": pid,
            "asked_by": asked,
            "took_s": round(took, 3),
        },
        f"stopped the runtime on {data_dir} (pid {pid}) in {took:.1f} s",
    )


def _said(args: argparse.Namespace, record: dict[str, Any], sentence: str) -> int:
    if args.json:
        print_json(record)
    else:
        print(sentence)
    return 0
