"""Crash points for recovery tests, switched on by the environment.

`LINEUP_CRASH="actor.after_emit@3,supervisor.after_commit@50"` makes a process SIGKILL
itself the 3rd time it reaches `actor.after_emit`, the 50th time it reaches
`supervisor.after_commit`. Counts are per process, so a restarted actor counts afresh.
Unset (the normal case), `crash_point` costs one dict lookup.

With `LINEUP_CRASH_ONCE_DIR=DIR` a point fires once for the whole run instead of once per
process: it leaves `DIR/<point>` behind when it fires and never fires while that file
exists, so the restarted actor replays its message without crashing again.
"""

from __future__ import annotations

import os
import signal

POINTS = (
    "actor.after_receive",  # a delivery arrived, its handler has not run
    "actor.after_emit",  # the handler ran and emitted its outputs, the ack is not sent
    "supervisor.after_commit",  # a batch is committed, nothing of it forwarded
    "supervisor.after_forward",  # deliveries forwarded, the acks read are not yet marked
    "app_manager.after_start",  # an operation's row says running, none of its work is done
    "app_manager.after_step",  # the operation's work is done, its final rows are not written
    "store.session_data_after_commit",  # a replace is committed, its answer not yet sent
    "capability_gateway.after_effect",  # a capability ran its effect, its end is unrecorded
    "store.artifact_mid_file",  # half an artifact's bytes are in its temporary file
    "store.artifact_before_commit",  # its file is in place, its row is not committed
    "tool_router.unsynced",  # a step is committed, its envelopes for the agent wait unsent
)


def _parse(spec: str) -> dict[str, int]:
    points: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, count = item.partition("@")
        if name not in POINTS:
            raise ValueError(f"unknown crash point {name!r}; known: {', '.join(POINTS)}")
        points[name] = int(count or "1")
    return points


_armed = _parse(os.environ.get("LINEUP_CRASH", ""))
_once_dir = os.environ.get("LINEUP_CRASH_ONCE_DIR")
_hits: dict[str, int] = {}


def crash_point(name: str) -> None:
    if not _armed:
        return
    target = _armed.get(name)
    if target is None:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] != target:
        return
    if _once_dir is not None:
        try:  # O_EXCL: of the processes that get here, one fires, once per run
            os.close(os.open(os.path.join(_once_dir, name), os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            return
    os.kill(os.getpid(), signal.SIGKILL)
