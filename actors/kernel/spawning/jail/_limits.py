"""Resource limits the launcher puts on the app: its cgroup, joined before the app's code
runs (so the app and all it starts are counted in it), and rlimits, set as the app's uid
just before the exec (soft and hard alike: it cannot raise them again).

A move into a cgroup v1 hierarchy waits for an RCU grace period (milliseconds). With a pid
namespace the moves are off the app's path: the launcher opens each `cgroup.procs` before
it forks the namespace's init, then, as its waiting parent, writes its own pid and the
init's while the init builds its view; the init waits for the word before it takes the
app's identity (`_init`).

- RLIMIT_FSIZE: no file it writes grows past `--max-file-bytes` (the write fails with
  EFBIG; SIGXFSZ is ignored, so a program that does not expect the signal is not killed);
- RLIMIT_NPROC (own uid only: the count is per real uid, all its processes and threads):
  a second bound on its processes, where the cgroup's is missing;
- RLIMIT_NOFILE: at most `NOFILE` open files;
- RLIMIT_CORE 0: no core dump fills its directory.
"""

from __future__ import annotations

import os
import resource
import signal
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ._report import Report

NOFILE: Final = 1024


def open_cgroups(dirs: list[str]) -> tuple[list[tuple[str, int]], str | None]:
    """Each directory's `cgroup.procs`, open for writing (an fd keeps it reachable once
    the view covers /sys); what could not be opened, in words."""
    opened: list[tuple[str, int]] = []
    for where in dirs:
        try:
            fd = os.open(os.path.join(where, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
        except OSError as exc:
            return opened, f"cannot join {where}: {exc.strerror or exc}"
        opened.append((where, fd))
    return opened, None


def move_into(procs: list[tuple[str, int]], pids: list[int]) -> str | None:
    """Write each pid to each opened `cgroup.procs`; what failed, in words."""
    for where, fd in procs:
        try:
            for pid in pids:
                os.write(fd, str(pid).encode())
        except OSError as exc:
            return f"cannot join {where}: {exc.strerror or exc}"
    return None


def close_cgroups(procs: list[tuple[str, int]]) -> None:
    for _, fd in procs:
        os.close(fd)


def report_joined(report: Report, count: int, problem: str | None) -> None:
    if problem is not None:
        report.missing("cgroup", problem)
    elif count:
        report.ok("cgroup", f"joined before its code runs ({count} hierarchies)")


def set_limits(
    report: Report, *, max_file: int | None, max_processes: int | None, own_uid: bool
) -> None:
    limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_NOFILE, NOFILE)]
    if max_file is not None:
        limits.append((resource.RLIMIT_FSIZE, max_file))
    if max_processes is not None and own_uid:
        limits.append((resource.RLIMIT_NPROC, max_processes))
    try:
        for which, wanted in limits:
            _, hard = resource.getrlimit(which)
            value = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(which, (value, value))
    except (OSError, ValueError) as exc:
        report.missing("rlimits", str(exc))
        return
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # ignored stays ignored across exec
    told = [f"open files {NOFILE}", "no core dump"]
    if max_file is not None:
        report.ok("file_size", f"at most {max_file} bytes a file (RLIMIT_FSIZE)")
    if max_processes is not None and own_uid:
        told.append(f"processes of its uid {max_processes}")
    report.ok("rlimits", ", ".join(told))
