"""The supervisor's side of app isolation; the launcher (`actors.kernel.spawning.jail`) enforces it.

An isolated child (a `ChildSpec` with `isolation`) is never forked from the kernel's
zygote: that zygote is a copy of a trusted process, memory and environment included. It is
forked from the app zygote (`jail.app_zygote`, which holds no secret), or exec'd as
`python -m actors.kernel.spawning.jail OPTIONS -- python -m
actors.kernel.actor_process.child TARGET FD PID`; either way the jail's steps (`jail`
`jail_app`) enter namespaces, build the app's view of the file system and become the app's
own uid before the app runs. What the supervisor decides is here:

- **who the app is**: a uid and gid of its own (`app_id`), allocated at the app's first
  start and persisted in `DATA_DIR/app_ids.json`, so its files stay its own across restarts;
- **what it is told**: an allow-listed environment (`scrubbed_environment`);
- **what it must not reach**: the data dir is made 0700 (`seal_data_dir`): the mailbox,
  `runtime.db`, the token, the control and UI sockets, the logs and every app's directory
  are below it, and the launcher hides it from the app's view as well;
- **what it may use**: a cgroup (`_containment`), which the launcher joins, and the
  rlimits the launcher sets (`JailPlan.max_file`, `max_processes`);
- **what it learns back**: the launcher's report of what it enforced, with the cgroup's
  and the log's steps merged in (`merge_report`, `log_jail_report`), shown in the
  actor's statistics as `isolation`.

**Identities.** Each app has a uid and a gid of the same number, allocated at its first
start and kept in `DATA_DIR/app_ids.json` (scope → id). The first candidate is a hash of
(data dir, scope) in 0x70000000 to 0x7FFDFFFF (above the ranges systemd hands out, below
2³¹), then the next free one: one taken in the table, or by a user or group of the system,
is skipped. Two apps of one runtime never share an id; two runtimes on one machine (two
data dirs) allocate independently, and the hash makes a clash unlikely (about n²/5·10⁸ for
n apps), not impossible.

**What it is told.** Environment: `PATH`, `LANG`, `LC_ALL`, `LC_CTYPE`, `TZ`,
`LINEUP_LOG_LEVEL` if set, `PYTHONPATH` (the project root and the absolute entries of the
supervisor's; a relative entry would be looked up in the app's own directory),
`PYTHONSAFEPATH=1` and `PYTHONNOUSERSITE=1` (its writable cwd and `HOME` must not shadow
the kernel's modules on its next start), and `HOME=/tmp/app`. Nothing else: no `*TOKEN*`,
no `LINEUP_DATA_DIR`. In the `kernel.welcome` config `app_dir` is `"."` (set by the spec,
and any other value refused), and the spec refuses a config with a key naming a token,
secret, password, credential or data dir, or any absolute path.

**The sealed data dir.** It is made 0700 (and `apps/` 0700) when an isolated child is
planned: `mailbox.db`, `runtime.db` (0644 as SQLite creates them), `.runtime_token`
(0600), `control.sock` and `ui.sock` (0600), `supervisor.lock`, `logs/` and every app's
directory (0700, its own uid) are below it.
"""

from __future__ import annotations

import grp
import hashlib
import json
import logging
import os
import pwd
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from actors.kernel.spawning.jail import level_of, scrubbed_environment
from contracts import replace_file

if TYPE_CHECKING:
    from .._specs import ChildSpec
    from ._containment import AppCgroup

log = logging.getLogger("lineup.supervisor")

IDS_FILE: Final = "app_ids.json"
# App uids (each app's gid is the same number). Above every range systemd hands out (system,
# dynamic, container: docs/UIDS-GIDS.md) and below 2^31, which some tools read as negative.
ID_RANGE: Final = range(0x7000_0000, 0x7FFE_0000)

# Everything else in the supervisor's environment stays behind: tokens, LINEUP_DATA_DIR,
# the AppServer's address, the user's own settings.


def app_id(data_dir: Path, scope: str) -> int:
    """The uid (and gid) of app `scope` in this data dir: allocated once, then kept.

    The first candidate is a hash of (data dir, scope), not a counter: two runtimes on one
    machine (two data dirs) allocate independently, and the same uid in both would let one
    runtime's app signal or trace the other's. Taken ids (in this table, or by a user or
    group of the system) are skipped.
    """
    path = data_dir / IDS_FILE
    table = _load_ids(path)
    if scope in table:
        return table[scope]
    taken = set(table.values())
    digest = hashlib.sha256(f"{data_dir.resolve()}\0{scope}".encode()).digest()
    offset = int.from_bytes(digest[:8], "big") % len(ID_RANGE)
    for step in range(len(ID_RANGE)):
        candidate = ID_RANGE[(offset + step) % len(ID_RANGE)]
        if candidate not in taken and not _id_in_use(candidate):
            table[scope] = candidate
            _save_ids(path, table)
            return candidate
    raise RuntimeError("no app uid left")  # 268 million apps: not in this lifetime


def _id_in_use(number: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(number)
        except KeyError:
            continue
        return True
    return False


def _load_ids(path: Path) -> dict[str, int]:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        # Allocating anew gives the same ids (the hash) unless one collided; the launcher
        # hands an app's files over to its uid if it changed.
        log.warning("%s is unreadable (%s): app ids are allocated anew", path, exc)
        return {}
    return {str(k): int(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _save_ids(path: Path, table: dict[str, int]) -> None:
    replace_file(path, json.dumps(table, indent=1, sort_keys=True) + "\n")


def seal_data_dir(data_dir: Path) -> None:
    """Owner only: the data dir, and the directory of the apps' private dirs."""
    os.chmod(data_dir, 0o700)
    apps = data_dir / "apps"
    apps.mkdir(mode=0o700, exist_ok=True)
    os.chmod(apps, 0o700)


@dataclass(frozen=True)
class JailPlan:
    """What the launcher is told for one isolated incarnation."""

    private_dir: Path
    uid: int
    gid: int
    hidden: tuple[Path, ...]
    env: dict[str, str]
    code_dir: Path | None = None
    cgroups: tuple[Path, ...] = ()  # one directory per hierarchy, for the launcher to join
    max_file: int | None = None  # RLIMIT_FSIZE
    max_processes: int | None = None  # RLIMIT_NPROC of its own uid

    def fields(self) -> dict[str, Any]:
        """The jail as the app zygote's forked child takes it (`jail.AppJail`, but for the
        fds, which travel beside it)."""
        return {
            "private_dir": str(self.private_dir),
            "uid": self.uid,
            "gid": self.gid,
            "hidden": [str(path) for path in self.hidden],
            "code": str(self.code_dir) if self.code_dir is not None else None,
            "cgroups": [str(path) for path in self.cgroups],
            "max_file": self.max_file,
            "max_processes": self.max_processes,
        }

    def command(self, child_command: list[str], *, channel_fd: int, report_fd: int) -> list[str]:
        hide = [arg for path in self.hidden for arg in ("--hide", str(path))]
        if self.code_dir is not None:
            hide += ["--code", str(self.code_dir)]
        hide += [arg for path in self.cgroups for arg in ("--cgroup", str(path))]
        if self.max_file is not None:
            hide += ["--max-file-bytes", str(self.max_file)]
        if self.max_processes is not None:
            hide += ["--max-processes", str(self.max_processes)]
        return [
            sys.executable,
            "-m",
            "actors.kernel.spawning.jail",
            "--private-dir",
            str(self.private_dir),
            "--uid",
            str(self.uid),
            "--gid",
            str(self.gid),
            "--channel-fd",
            str(channel_fd),
            "--report-fd",
            str(report_fd),
            "--parent-pid",
            str(os.getpid()),
            *hide,
            "--",
            *child_command,
        ]


def plan_jail(
    spec: ChildSpec,
    data_dir: Path,
    source_env: Mapping[str, str],
    cgroup: AppCgroup | None = None,
) -> JailPlan:
    isolation = spec.isolation
    assert isolation is not None
    data_dir = data_dir.resolve()
    seal_data_dir(data_dir)
    number = app_id(data_dir, isolation.scope)
    return JailPlan(
        private_dir=data_dir / isolation.private_dir,
        uid=number,
        gid=number,
        hidden=(data_dir,),
        env=scrubbed_environment(source_env),
        code_dir=data_dir / isolation.code_dir if isolation.code_dir else None,
        cgroups=tuple(cgroup.dirs) if cgroup is not None else (),
        max_file=isolation.file_max,
        max_processes=isolation.max_processes,
    )


def merge_report(
    report: dict[str, Any] | None, cgroup: AppCgroup, spec: ChildSpec, launch: str
) -> dict[str, Any] | None:
    """The launcher's report with what the supervisor enforced itself: the cgroup's limits,
    the log and the directory quota; the level worked out again over all of it. `launch`:
    how its process started ("zygote", or "exec" and why not from the app zygote)."""
    if report is None:
        return None
    isolation = spec.isolation
    assert isolation is not None
    enforced = {**report.get("enforced", {}), **cgroup.enforced}
    missing = {**report.get("not_enforced", {}), **cgroup.not_enforced}
    enforced["log"] = f"a pipe; logs/{spec.name}.log rotated to .1 at {isolation.log_max} bytes"
    enforced["directory_quota"] = (
        f"{isolation.dir_max} bytes in its directory, checked every {isolation.dir_check_s:g} s"
    )
    return {
        **report,
        "level": level_of(enforced, missing),
        "enforced": enforced,
        "not_enforced": missing,
        "launch": launch,
    }


def log_jail_report(name: str, report: dict[str, Any] | None) -> None:
    """Say what the launcher enforced; loudly what it could not (it never pretends)."""
    if report is None:
        log.error("%s: its launcher ended before it reported (see logs/%s.log)", name, name)
        return
    enforced = ", ".join(f"{k}: {v}" for k, v in report.get("enforced", {}).items())
    missing = report.get("not_enforced", {})
    launch = report.get("launch")
    if missing:
        lacking = "; ".join(f"{k}: {v}" for k, v in missing.items())
        log.warning("%s isolated %s (%s), NOT enforced: %s", name, report["level"], launch, lacking)
    else:
        log.info("%s isolated %s (%s; %s)", name, report.get("level"), launch, enforced)
