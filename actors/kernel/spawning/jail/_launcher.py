"""The launcher of an isolated app: `python -m actors.kernel.spawning.jail OPTIONS --
CHILD_ARGV...`.

The supervisor starts it (`actors.kernel.spawning._sandbox.JailPlan.command`) so:

    python -m actors.kernel.spawning.jail --private-dir DATA/apps/<scope> --uid N --gid N \\
        --channel-fd FD --report-fd R --parent-pid SUP --hide DATA \\
        --cgroup DIR ... --max-file-bytes F --max-processes P -- \\
        python -m actors.kernel.actor_process.child module:Class FD SUP

with the scrubbed environment, cwd `/`, stdin from /dev/null, a pipe as stdout and stderr
(the app's log, `actors.kernel.spawning._applog`), and two more fds: the app's channel and a pipe
on which it reports what it enforced (close-on-exec: EOF at the exec). Before that the
supervisor makes the app's cgroup (`actors.kernel.spawning._containment`). The launcher confines
its own process, step by step, then execs the child in it. In order (`jail_app`, the same
steps for an app forked from the app zygote):

1. die with the supervisor (parent-death signal, and exit if already re-parented); open the
   app's cgroups (`cgroup.procs` of every hierarchy), which it joins with the app before
   any code of the app runs, so the app and all it starts are in them (`_limits`);
2. namespaces of its own: network (no interface up, not even loopback: no network), mount,
   IPC and pid (`unshare(2)`). As root directly; as another user inside a user namespace
   that maps only its own uid and gid (`setgroups` denied first, as
   `user_namespaces(7)` requires). Then it forks the app (`_init`): the child is pid 1,
   the init, of the new pid namespace and takes every step below; the launcher stays
   outside it as the app's waiting parent, relays signals and exits as the app did, so the
   supervisor waits on the launcher as on the app;
3. its private directory: created 0700, opened with `O_NOFOLLOW`, handed to the app's uid
   through fds (a tree written before it ran jailed is handed over without following
   symlinks; a file with several hard links is left alone);
4. its view of the file system (mount namespace, propagation private): an empty tmpfs over
   /tmp, /var/tmp and /dev/shm; what the child's interpreter needs made reachable wherever
   the runtime is installed (`_reach`); an empty mode-0000 tmpfs over the data dir
   wherever it is still visible, on top of all that; a fresh /proc of its pid namespace
   (it lists the app's own processes only); every mount read-only and nosuid
   (`mount_setattr(2)`, `AT_RECURSIVE`); then the private directory bind-mounted
   read-write at /tmp/app, its cwd and HOME; an installed app's verified code (`--code`,
   the bundle cache entry's `app/`, opened before the data dir is covered) bound
   read-only at /tmp/app-code/app. Its cwd is a mount root, so `..` leads to that empty
   /tmp, not to the other apps' directories. (The app sees its directory under a path of
   its own because SQLite turns a relative name into an absolute one from the cwd: the
   real path, under a 0700 data dir, could not be opened by the app's uid.) Where the
   kernel or the file system refuses an idmapped mount, a location is mounted back as it
   is and the report says `code_access` NOT enforced: the app then fails to start, with
   the reason in its log;
5. its identity (root only): no supplementary groups, then the app's gid and uid as real,
   effective and saved ids (no way back, no capability left); then the parent-death
   signal again (a credential change clears it; the child arms it again at its start) and
   `kill(-1, SIGKILL)` as that uid, which ends any leftover process of its uid it can see;
6. rlimits, soft and hard alike (`_limits`); umask 077 and no-new-privileges (no setuid
   binary or file capability gives it more);
7. only fds 0-2 and its channel stay open; the report goes to the supervisor (with the
   app's pid as the supervisor sees it, shown by `lineup debug actors`); exec.

A step that cannot be taken is never skipped silently: it goes to the log (stderr) and to
the report as `not_enforced`, which the supervisor logs and shows in the actor's statistics.
One gap is refused outright: a root launcher that cannot become the app's uid exits
rather than run an installed app as root."""

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
from dataclasses import dataclass
from typing import Final

from ..._own_process import die_with_parent as _die_with_parent
from . import _init
from ._env import scrubbed_environment
from ._limits import (
    close_cgroups,
    move_into,
    open_cgroups,
    report_joined,
    set_limits,
)
from ._reach import Show, entry_owner, needed, plan_view
from ._report import Report

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
# The same numbers on every architecture (the "new" mount syscalls).
SYS_OPEN_TREE: Final = 428
SYS_MOVE_MOUNT: Final = 429
SYS_MOUNT_SETATTR: Final = 442
OPEN_TREE_CLONE: Final = 0x1
OPEN_TREE_CLOEXEC: Final = os.O_CLOEXEC
AT_EMPTY_PATH: Final = 0x1000
MOVE_MOUNT_F_EMPTY_PATH: Final = 0x4
MOUNT_ATTR_IDMAP: Final = 0x10_0000
AT_FDCWD: Final = -100
AT_RECURSIVE: Final = 0x8000
MOUNT_ATTR_RDONLY: Final = 0x1
MOUNT_ATTR_NOSUID: Final = 0x2

VIEW_DIR: Final = "/tmp/app"  # where the app sees its private directory
CODE_VIEW: Final = "/tmp/app-code"  # where it sees its verified code, read-only
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
    app: tuple[int, int] | None,
    app_code: str | None,
    own_pids: bool,
    interpreter: str,
    import_path: list[str],
) -> str:
    """The app's file system (step 4); returns its working directory. `app`: the uid and
    gid the app will run as, to which the supervisor's files are "other" (None: it keeps
    the launcher's uid)."""
    # The directories made for its view (mount points on a tmpfs of its own) must be
    # searchable by its uid whatever umask the runtime runs under (077 makes them 0700);
    # the app's own umask is set later (step 6).
    os.umask(0o022)
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
        plan = plan_view(*needed(interpreter, import_path), other_uid=app is not None)
        # Everything is opened before anything is covered: the code may live below a
        # cover, or in the bundle cache under the data dir.
        sources = [(show, _open_show(show)) for show in plan.shows]
        code_fd = _open_path(app_code) if app_code is not None else None
        code_owner = entry_owner(app_code) if app is not None and app_code is not None else None
        for cover in plan.covers:
            _empty_tmpfs(cover, "0755")
        shown = _OwnerViews(app)
        for show, opened in sources:
            _mount_show(show, opened, shown, report)
        for path in hidden:
            if os.path.isdir(path):  # under /tmp it is gone already
                _empty_tmpfs(path, "0000")
        os.mkdir(VIEW_DIR)  # in the /tmp of its own
        if code_fd is not None:  # read-only with everything else below; never its to change
            os.makedirs(f"{CODE_VIEW}/app")
            shown.mount(code_fd, f"{CODE_VIEW}/app", code_owner, report)
            os.close(code_fd)
        shown.close()
    except OSError as exc:
        report.missing("filesystem", f"no view of its own ({exc.strerror or exc})")
        report.missing("read_only", "no view of its own")
        os.fchdir(private_fd)
        return os.getcwd()
    detail = f"its directory at {VIEW_DIR}, empty /tmp, data dir hidden"
    if shown.count:
        detail += f"; {shown.count} owner-only code location(s) shown read-only as its own"
    report.ok("filesystem", detail)
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


_Opened = int | list[tuple[str, int, tuple[int, int] | None, bool]]


def _open_show(show: Show) -> _Opened:
    """An fd of the location, or of each of its shown entries: (name, fd, owner, is a dir)."""
    if show.entries is None:
        return _open_path(show.path)
    opened = []
    for name in show.entries:
        path = os.path.join(show.path, name)
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        opened.append((name, fd, entry_owner(path), os.path.isdir(path)))
    return opened


def _mount_show(show: Show, opened: _Opened, shown: _OwnerViews, report: Report) -> None:
    # Its mount point is created on a tmpfs of the view: the path exists on the real file
    # system, so nothing is ever created there.
    os.makedirs(show.path, exist_ok=True)
    if isinstance(opened, int):
        shown.mount(opened, show.path, show.as_owner, report)
        os.close(opened)
        return
    _empty_tmpfs(show.path, "0755")  # only what Python imports from it is shown
    for name, fd, owner, is_dir in opened:
        target = os.path.join(show.path, name)
        if is_dir:
            os.mkdir(target)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
        shown.mount(fd, target, owner, report)
        os.close(fd)


class _OwnerViews:
    """Mounts a location back, as it is or with its owner shown as the app's uid: an
    idmapped mount (mount_setattr(2) MOUNT_ATTR_IDMAP) through a user namespace that maps
    the owner's ids to the app's, one namespace per owner. Nothing changes on the real file
    system, and the whole view is made read-only afterwards."""

    def __init__(self, app: tuple[int, int] | None) -> None:
        self.app = app
        self.userns: dict[tuple[int, int], int] = {}
        self.count = 0

    def mount(self, fd: int, target: str, owner: tuple[int, int] | None, report: Report) -> None:
        if owner is None or self.app is None:
            _bind(fd, target)
            return
        try:
            if owner not in self.userns:
                self.userns[owner] = _mapping_userns(owner, self.app)
            _bind_idmapped(fd, target, self.userns[owner])
        except OSError as exc:
            # Shown as it is: the app meets the same "Permission denied" as its log says.
            report.missing("code_access", f"{target}: its owner's alone ({exc.strerror or exc})")
            _bind(fd, target)
            return
        self.count += 1

    def close(self) -> None:
        for fd in self.userns.values():
            os.close(fd)
        self.userns.clear()


def _mapping_userns(owner: tuple[int, int], app: tuple[int, int]) -> int:
    """An fd of a new user namespace in which the owner's uid and gid are the app's.

    A helper process makes it (unshare(2) CLONE_NEWUSER) and waits; we write its maps
    (root may map any id) and keep the namespace by an fd. The helper says its pid as
    /proc sees it: we are in a pid namespace of our own, and /proc is still the host's.
    """
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper
        try:
            os.close(ready_r)
            os.close(done_w)
            _check(_libc.unshare(CLONE_NEWUSER), "unshare (user namespace)")
            os.write(ready_w, str(_proc_pid()).encode())
            os.read(done_r, 1)  # until the namespace is kept (or we are gone)
        finally:
            os._exit(0)
    os.close(ready_w)
    os.close(done_r)
    try:
        host_pid = os.read(ready_r, 32).decode()
        if not host_pid:
            raise OSError(f"the helper of the idmapping ended: {os.waitpid(pid, 0)}")
        _write_map(f"/proc/{host_pid}/uid_map", f"{owner[0]} {app[0]} 1")
        _write_map(f"/proc/{host_pid}/gid_map", f"{owner[1]} {app[1]} 1")
        return os.open(f"/proc/{host_pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(ready_r)
        os.close(done_w)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _proc_pid() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("NSpid:"):
                return int(line.split()[1])
    return os.getpid()


def _write_map(path: str, line: str) -> None:
    with open(path, "w") as f:
        f.write(line)


def _bind_idmapped(fd: int, target: str, userns_fd: int) -> None:
    """A copy of the mount of `fd` (open_tree(2)), idmapped through `userns_fd`, moved to
    `target` (move_mount(2))."""
    tree = _libc.syscall(
        ctypes.c_long(SYS_OPEN_TREE),
        ctypes.c_long(fd),
        ctypes.c_char_p(b""),
        ctypes.c_long(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH),
    )
    if tree < 0:
        _check(tree, f"open_tree {target}")
    try:
        attr = _MountAttr(MOUNT_ATTR_IDMAP, 0, 0, userns_fd)
        _check(
            _libc.syscall(
                ctypes.c_long(SYS_MOUNT_SETATTR),
                ctypes.c_long(tree),
                ctypes.c_char_p(b""),
                ctypes.c_long(AT_EMPTY_PATH),
                ctypes.byref(attr),
                ctypes.c_long(ctypes.sizeof(attr)),
            ),
            f"idmap {target}",
        )
        _check(
            _libc.syscall(
                ctypes.c_long(SYS_MOVE_MOUNT),
                ctypes.c_long(tree),
                ctypes.c_char_p(b""),
                ctypes.c_long(AT_FDCWD),
                ctypes.c_char_p(target.encode()),
                ctypes.c_long(MOVE_MOUNT_F_EMPTY_PATH),
            ),
            f"move_mount {target}",
        )
    finally:
        os.close(tree)


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


# -- the jail, whichever way the app's process started --------------------------------------


@dataclass(frozen=True)
class AppJail:
    """One app's jail: who it is, where its files are, what bounds it, and the two fds it
    is handed (its channel, the report's pipe). The same for an exec'd and a forked app."""

    private_dir: str
    uid: int
    gid: int
    channel_fd: int
    report_fd: int
    hidden: tuple[str, ...] = ()
    code: str | None = None  # the app's verified code (a bundle's app/ directory)
    cgroups: tuple[str, ...] = ()  # a cgroup directory to join, per hierarchy
    max_file: int | None = None  # RLIMIT_FSIZE
    max_processes: int | None = None  # RLIMIT_NPROC of its own uid


def jail_app(jail: AppJail, *, parent_pid: int, interpreter: str) -> dict[str, str]:
    """Steps 2-7, in the process that is to run the app (in the host's view of the file
    system); the environment it is to run with. With a pid namespace of its own, the
    calling process stays behind as the app's waiting parent (`_init`) and never returns.
    `parent_pid`: the process this one dies with; `interpreter`: the Python the app runs
    on, which its view must show."""
    report = Report()
    cgroups = list(jail.cgroups)
    procs, problem = open_cgroups(cgroups)
    own_mounts, own_pids = enter_namespaces(report)
    host_pid = os.getpid()
    rearm: Callable[[], None] = lambda: _die_with_parent(parent_pid)  # noqa: E731
    if own_pids:
        # The caller stays behind as the init's waiting parent, and moves both into the
        # app's cgroups while the init goes on; the init waits for it before the app's
        # identity (`_init.joined`).
        host_pid = _init.fork_init(lambda pids: problem or move_into(procs, pids))
        rearm = _init.rearm_death_signal
    else:
        report_joined(report, len(cgroups), problem or move_into(procs, [os.getpid()]))
    close_cgroups(procs)
    private_fd = prepare_private_dir(jail.private_dir, jail.uid, jail.gid)
    if own_mounts:
        home = build_view(
            report,
            private_fd,
            list(jail.hidden),
            app=(jail.uid, jail.gid) if os.geteuid() == 0 else None,
            app_code=jail.code,
            own_pids=own_pids,
            interpreter=interpreter,
            import_path=os.environ.get("PYTHONPATH", "").split(os.pathsep),
        )
        code_view = CODE_VIEW if os.path.isdir(f"{CODE_VIEW}/app") else jail.code
    else:
        report.missing("read_only", "no mount namespace")
        os.fchdir(private_fd)
        home = os.getcwd()
        code_view = jail.code
    os.close(private_fd)
    if own_pids:
        report_joined(report, len(cgroups), _init.joined())
    become_app(report, jail.uid, jail.gid, rearm)
    set_limits(
        report,
        max_file=jail.max_file,
        max_processes=jail.max_processes,
        own_uid="identity" in report.enforced,
    )
    forbid_new_privileges(report)
    env = scrubbed_environment(os.environ, home=home)
    if code_view is not None:  # the directory that holds the package `app`
        env["LINEUP_APP_CODE"] = os.path.dirname(code_view) if code_view == jail.code else CODE_VIEW
    kept = [0, 1, 2, jail.channel_fd]
    with os.fdopen(jail.report_fd, "w") as out:
        out.write(json.dumps({**report.record(kept), "pid": host_pid}) + "\n")
    _init.close_launcher_fd()
    close_all_but(set(kept))
    return env


# -- the launcher ------------------------------------------------------------------------


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m actors.kernel.spawning.jail OPTIONS -- CHILD_ARGV...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m actors.kernel.spawning.jail")
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
    _die_with_parent(args.parent_pid)  # step 1
    jail = AppJail(
        args.private_dir,
        args.uid,
        args.gid,
        args.channel_fd,
        args.report_fd,
        tuple(args.hide),
        args.code,
        tuple(args.cgroup),
        args.max_file_bytes,
        args.max_processes,
    )
    env = jail_app(jail, parent_pid=args.parent_pid, interpreter=child[0])
    os.execve(child[0], child, env)
