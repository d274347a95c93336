"""Whether a child's event loop waits for work, seen from outside without waking it.

A trio loop with nothing to do sleeps in `epoll_wait`; Linux shows where a process's main
thread sleeps in `/proc/PID/wchan` and whether it sleeps at all in `/proc/PID/stat`. A child
asleep there would answer a heartbeat at once, so the supervisor need not wake it to ask:
an idle runtime's heartbeats cost no actor a wakeup. Anything else (a handler holding the
loop in a blocking call, a stopped or busy process, a `/proc` that says nothing) is asked
by a ping as before.
"""

from __future__ import annotations

from typing import Final

# The kernel functions in which a process sleeps inside epoll_wait (newer and older names).
_EPOLL_WAITS: Final = frozenset({"do_epoll_wait", "ep_poll"})


def waits_for_work(pid: int | None) -> bool:
    """True when `pid`'s main thread sleeps in epoll_wait (its loop is idle)."""
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2].split()[0]
        with open(f"/proc/{pid}/wchan", "rb") as wchan:
            where = wchan.read().decode(errors="replace").strip()
    except (OSError, IndexError):
        return False
    return state == b"S" and where in _EPOLL_WAITS
