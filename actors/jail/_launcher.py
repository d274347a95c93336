"""The launcher of an isolated app: `python -m actors.jail OPTIONS -- CHILD_ARGV...`.

The supervisor starts it (`_sandbox.JailPlan.command`) with a scrubbed environment, stdin
from /dev/null, the app's log as stdout and stderr, and two more fds: the app's channel and
a pipe for the report. It confines its own process, step by step, then execs the child in
it: same pid, so the supervisor waits on it as on any child. In order:

1. die with the supervisor (parent-death signal);
2. namespaces of its own: network (no interface up, not even loopback: no network), mount
   and IPC. As root directly; as another user inside a user namespace that maps only its
   own uid (unshare(2), user_namespaces(7));
3. its private directory: created 0700 and handed to the app's uid;
4. its view of the file system: every mount read-only and nosuid; an empty /tmp, /var/tmp
   and /dev/shm of its own; the data dir covered; the interpreter, the project and the
   import path reachable even under a directory its uid may not search (a Python under
   /root, 0700); its private directory mounted at /tmp/app, its cwd and HOME. Its cwd is a
   mount root, so `..` leads to that empty /tmp, not to the other apps' directories;
5. its identity (root only): no supplementary groups, then the app's gid and uid as real,
   effective and saved ids (no way back, no capability left); then the parent-death
   signal again (a credential change clears it) and every leftover process of that uid
   killed (an app's own children do not die with it);
6. umask 077 and no-new-privileges (no setuid binary or file capability gives it more);
7. only fds 0-2 and its channel stay open; the report goes to the supervisor; exec.

A step that cannot be taken is never skipped silently: it goes to the log (stderr) and to
the report as `not_enforced`, which the supervisor logs and shows in the actor's statistics.
One gap is refused outright: a root launcher that cannot become the app's uid exits
rather than run an installed app as root.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import signal
import stat
import sys
from collections.abc import Callable
from typing import Any, Final

from . import _init
from ._env import die_with_parent as _die_with_parent
from ._env import scrubbed_environment
from ._limits import join_cgroups, set_limits

CLONE_NEWNS: Final = 0x0002_0000
CLONE_NEWIPC: Final = 0x0800_0000
CLONE_NEWPID: Final = 0x2000_0000
CLONE_NEWUSER: Final = 0x1000_0000
CLONE_NEWNET: Final = 0x4000_0000
MS_NOSUID: Final = 0x2
MS_NODEV: Final = 0x4
MS_NOEXEC: Final = 0x8
MS_BIND: Final = 0x1000
MS_REC: Final = 0x4000
MS_PRIVATE: Final = 0x4_0000
PR_SET_PDEATHSIG: Final = 1
PR_SET_NO_NEW_PRIVS: Final = 38
SYS_MOUNT_SETATTR: Final = 442  # the same number on every architecture (a "new" syscall)
AT_FDCWD: Final = -100
AT_RECURSIVE: Final = 0x8000
MOUNT_ATTR_RDONLY: Final = 0x1
MOUNT_ATTR_NOSUID: Final = 0x2

VIEW_DIR: Final = "/tmp/app"  # where the app sees its private directory
CODE_VIEW: Final = "/tmp/app-code"  # where it sees its verified code, read-only
PRIVATE_TMP: Final = ("/tmp", "/var/tmp", "/dev/shm")  # shared, writable by all: covered
CORE_STEPS: Final = ("network", "filesystem", "identity")

_libc = ctypes.CDLL(None, use_errno=True)


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _bind(fd: int, target: str) -> None:
    """Mount the directory open as `fd` at `target`: reachable even where the path it was
    opened by is now covered or not searchable."""
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)


def _empty_tmpfs(target: str, mode: str) -> None:
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size=64k")


class Report:
    """What was enforced and what was not, in the words the operator will read."""

    def __init__(self) -> None:
        self.enforced: dict[str, str] = {}
        self.not_enforced: dict[str, str] = {}

    def ok(self, step: str, detail: str) -> None:
        self.enforced[step] = detail

    def missing(self, step: str, reason: str) -> None:
        self.not_enforced[step] = reason
        print(f"jail: NOT enforced: {step}: {reason}", file=sys.stderr, flush=True)

    def record(self, fds: list[int]) -> dict[str, Any]:
        return {
            "level": level_of(self.enforced, self.not_enforced),
            "enforced": self.enforced,
            "not_enforced": self.not_enforced,
            "fds": fds,
        }


def level_of(enforced: dict[str, str], not_enforced: dict[str, str]) -> str:
    """full: nothing missing; partial: some of the core steps enforced; else none."""
    if not not_enforced:
        return "full"
    return "partial" if any(step in enforced for step in CORE_STEPS) else "none"


# -- the steps ---------------------------------------------------------------------------


def enter_namespaces(report: Report) -> tuple[bool, bool]:
    """New network, mount, IPC and pid namespaces: (the mount namespace is ours, the pid
    namespace is). A pid namespace alone refused (none left) still leaves the others."""
    try:
        try:
            _unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID)
            own_pids = True
        except OSError as exc:
            _unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC)
            report.missing("pid_namespace", f"refused ({exc.strerror or exc})")
            own_pids = False
    except OSError as exc:
        for step in ("network", "ipc", "filesystem", "pid_namespace"):
            report.missing(step, f"no namespace ({exc.strerror or exc})")
        return False, False
    report.ok("network", "namespace of its own, no interface up")
    report.ok("ipc", "namespace of its own")
    if own_pids:
        report.ok("pid_namespace", "its own, the app its init: what it leaves dies with it")
    return True, own_pids


def _unshare(flags: int) -> None:
    if os.geteuid() == 0:
        _check(_libc.unshare(flags), "unshare")
        return
    # Unprivileged: a user namespace first, mapping only our own ids, so that after the
    # exec (a non-zero uid) no capability is left in it either.
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(CLONE_NEWUSER | flags), "unshare (user namespace)")
    # setgroups first: an unprivileged gid_map is refused while setgroups is allowed.
    _write_proc("setgroups", "deny")
    _write_proc("uid_map", f"{uid} {uid} 1")
    _write_proc("gid_map", f"{gid} {gid} 1")


def _write_proc(name: str, line: str) -> None:
    with open(f"/proc/self/{name}", "w") as f:
        f.write(line)


def prepare_private_dir(path: str, uid: int, gid: int) -> int:
    """Create the app's directory (0700) and make it the app's; an fd to it.

    It is opened without following a symlink, and handed over through fds, without
    following any: the launcher may be root, and the app may have put anything in there.
    """
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    if os.geteuid() == 0:
        info = os.fstat(fd)
        if (info.st_uid, info.st_gid) != (uid, gid):
            _hand_over(fd, uid, gid)
        os.fchmod(fd, 0o700)
    return fd


def _hand_over(fd: int, uid: int, gid: int) -> None:
    """Give the app's files to its uid (they were written before it ran jailed, or under an
    id since reallocated). A file with several links is left alone: it may be a hard link
    to someone else's file."""
    os.fchown(fd, uid, gid)
    for _, dirs, files, dir_fd in os.fwalk(dir_fd=fd, follow_symlinks=False):
        for name in dirs + files:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode) or info.st_nlink == 1:
                os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
            else:
                print(f"jail: {name} has {info.st_nlink} links: not handed over", file=sys.stderr)


def build_view(
    report: Report,
    private_fd: int,
    hidden: list[str],
    *,
    other_uid: bool,
    app_code: str | None,
    own_pids: bool,
) -> str:
    """The app's file system (step 4); returns its working directory. `other_uid`: the app
    will run as a uid of its own, to which the supervisor's files are "other"."""
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
        code = _code_locations()
        covers = _covers(code, other_uid=other_uid)
        exposed = {p: _open_path(p) for p in code if any(_inside(p, c) for c in covers)}
        # Opened before the data dir is covered: the code lives in its bundle cache.
        code_fd = _open_path(app_code) if app_code is not None else None
        for cover in covers:
            _empty_tmpfs(cover, "0755")
        for path, fd in exposed.items():
            os.makedirs(path, exist_ok=True)
            _bind(fd, path)
            os.close(fd)
        for path in hidden:
            if os.path.isdir(path):  # under /tmp it is gone already
                _empty_tmpfs(path, "0000")
        os.mkdir(VIEW_DIR)  # in the /tmp of its own
        if code_fd is not None:  # read-only with everything else below; never its to change
            os.makedirs(f"{CODE_VIEW}/app")
            _bind(code_fd, f"{CODE_VIEW}/app")
            os.close(code_fd)
    except OSError as exc:
        report.missing("filesystem", f"no view of its own ({exc.strerror or exc})")
        report.missing("read_only", "no view of its own")
        os.fchdir(private_fd)
        return os.getcwd()
    report.ok("filesystem", f"its directory at {VIEW_DIR}, empty /tmp, data dir hidden")
    if own_pids:
        _mount_proc(report)
    try:
        _set_mount_attributes("/", add=MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, recursive=True)
        read_only = True
        report.ok("read_only", "every mount but its directory")
    except OSError as exc:
        read_only = False
        report.missing("read_only", exc.strerror or str(exc))
    _bind(private_fd, VIEW_DIR)
    if read_only:  # a bind mount takes its source's flags: its one writable place
        _set_mount_attributes(VIEW_DIR, add=MOUNT_ATTR_NOSUID, remove=MOUNT_ATTR_RDONLY)
    os.chdir(VIEW_DIR)
    return VIEW_DIR


def _mount_proc(report: Report) -> None:
    """A /proc of its pid namespace: it lists the app's own processes only."""
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError as exc:
        report.missing("proc", f"the host's /proc stays ({exc.strerror or exc})")
        return
    report.ok("proc", "its own: only its processes")


def _set_mount_attributes(path: str, *, add: int, remove: int = 0, recursive: bool = False) -> None:
    """mount_setattr(2): glibc has no wrapper; every argument is passed as a long."""
    attr = _MountAttr(add, remove, 0, 0)
    result = _libc.syscall(
        ctypes.c_long(SYS_MOUNT_SETATTR),
        ctypes.c_long(AT_FDCWD),
        ctypes.c_char_p(path.encode()),
        ctypes.c_long(AT_RECURSIVE if recursive else 0),
        ctypes.byref(attr),
        ctypes.c_long(ctypes.sizeof(attr)),
    )
    _check(result, f"mount_setattr {path}")


def _code_locations() -> list[str]:
    """The directories the child's interpreter reads (its installation, the venv, the
    import path), outermost only: a bind mount takes what is below it."""
    candidates = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        *sys.path,
    ]
    found = {os.path.realpath(p) for p in candidates if p}
    dirs = {p for p in found if os.path.isdir(p)}
    return sorted(p for p in dirs if not any(_inside(p, q) for q in dirs))


def _covers(code: list[str], *, other_uid: bool) -> list[str]:
    """What gets an empty tmpfs: the shared temporary dirs, and, when the app will run as a
    uid of its own, the highest directory above some code location that "others" may not
    search (the code below it is mounted back)."""
    covers = {p for p in PRIVATE_TMP if os.path.isdir(p) and not os.path.islink(p)}
    if other_uid:
        for path in code:
            blocked = next((a for a in _ancestors(path) if not _searchable(a)), None)
            if blocked is not None:
                covers.add(blocked)
    return sorted(c for c in covers if not any(_inside(c, o) for o in covers))


def _ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[:n]) for n in range(1, len(parts) + 1)]


def _searchable(path: str) -> bool:
    # The app's uid and gid are its own: on any directory not its own it is "other".
    return bool(os.stat(path).st_mode & stat.S_IXOTH)


def _inside(path: str, parent: str) -> bool:
    return path != parent and path.startswith(parent.rstrip("/") + "/")


def _open_path(path: str) -> int:
    return os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


def become_app(report: Report, uid: int, gid: int, rearm: Callable[[], None]) -> None:
    """Step 5. Only root can change who it is; anyone else stays the supervisor's user."""
    if os.geteuid() != 0:
        report.missing("identity", f"not root: runs as the supervisor's uid {os.geteuid()}")
        return
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as exc:
        message = f"jail: cannot become uid {uid}: {exc}; refusing to run it as root"
        raise SystemExit(message) from None
    rearm()  # the parent-death signal: cleared by the change of uid
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)  # as `uid` now: its leftovers only, never us
    report.ok("identity", f"uid {uid}, gid {gid}, no supplementary groups, no capabilities")


def forbid_new_privileges(report: Report) -> None:
    os.umask(0o077)
    try:
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl")
    except OSError as exc:
        report.missing("no_new_privs", str(exc))
        return
    report.ok("no_new_privs", "set")


def close_all_but(keep: set[int]) -> None:
    for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


# -- the launcher ------------------------------------------------------------------------


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m actors.jail OPTIONS -- CHILD_ARGV...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m actors.jail")
    parser.add_argument("--private-dir", required=True)
    parser.add_argument("--uid", type=int, required=True)
    parser.add_argument("--gid", type=int, required=True)
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--report-fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--hide", action="append", default=[])
    parser.add_argument("--code", help="the app's verified code (a bundle's app/ directory)")
    parser.add_argument("--cgroup", action="append", default=[], help="a cgroup dir to join")
    parser.add_argument("--max-file-bytes", type=int, help="RLIMIT_FSIZE")
    parser.add_argument("--max-processes", type=int, help="RLIMIT_NPROC of its own uid")
    child = argv[split + 1 :]
    if not child:
        raise SystemExit("jail: no child command after --")
    return parser.parse_args(argv[:split]), child


def main(argv: list[str]) -> None:
    args, child = _parse(argv)
    _die_with_parent(args.parent_pid)
    report = Report()
    join_cgroups(report, args.cgroup)
    own_mounts, own_pids = enter_namespaces(report)
    host_pid = os.getpid()
    rearm: Callable[[], None] = lambda: _die_with_parent(args.parent_pid)  # noqa: E731
    if own_pids:
        host_pid = _init.fork_init()  # the launcher stays behind, as its waiting parent
        rearm = _init.rearm_death_signal
    private_fd = prepare_private_dir(args.private_dir, args.uid, args.gid)
    if own_mounts:
        home = build_view(
            report,
            private_fd,
            args.hide,
            other_uid=os.geteuid() == 0,
            app_code=args.code,
            own_pids=own_pids,
        )
        code_view = CODE_VIEW if os.path.isdir(f"{CODE_VIEW}/app") else args.code
    else:
        report.missing("read_only", "no mount namespace")
        os.fchdir(private_fd)
        home = os.getcwd()
        code_view = args.code
    os.close(private_fd)
    become_app(report, args.uid, args.gid, rearm)
    set_limits(
        report,
        max_file=args.max_file_bytes,
        max_processes=args.max_processes,
        own_uid="identity" in report.enforced,
    )
    forbid_new_privileges(report)
    env = scrubbed_environment(os.environ, home=home)
    if code_view is not None:  # the directory that holds the package `app`
        env["LINEUP_APP_CODE"] = os.path.dirname(code_view) if code_view == args.code else CODE_VIEW
    kept = [0, 1, 2, args.channel_fd]
    with os.fdopen(args.report_fd, "w") as out:
        out.write(json.dumps({**report.record(kept), "pid": host_pid}) + "\n")
    _init.close_launcher_fd()
    close_all_but(set(kept))
    os.execve(child[0], child, env)
