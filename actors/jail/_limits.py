"""Resource limits the launcher puts on the app: its cgroup, joined before anything is
forked (so the app and all it starts are counted in it), and rlimits, set as the app's
uid just before the exec (soft and hard alike: it cannot raise them again).

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
    from ._launcher import Report

NOFILE: Final = 1024


def join_cgroups(report: Report, dirs: list[str]) -> None:
    """Move this process into each of the app's cgroup directories (one per hierarchy)."""
    for where in dirs:
        try:
            with open(os.path.join(where, "cgroup.procs"), "w") as procs:
                procs.write(str(os.getpid()))
        except OSError as exc:
            report.missing("cgroup", f"cannot join {where}: {exc.strerror or exc}")
            return
    if dirs:
        report.ok("cgroup", f"joined before the fork ({len(dirs)} hierarchies)")


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
