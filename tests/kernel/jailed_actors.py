"""The actor the isolation tests run jailed: it tries what an installed app must not do.

`probe` answers with the outcome of every attempt ("ok", or the error it met) and with what
the process is (ids, namespace, environment, fds). The same class runs unjailed as the
control: there every attempt must succeed, so a jailed failure means the jail, not a
wrong path in the test.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import sqlite3
import sys
import types
from pathlib import Path
from typing import Any, Final

import trio

from actors.kernel import Actor, Message, handles
from apps.sdk import EventLog

PTRACE_SEIZE: Final = 0x4206
PTRACE_INTERRUPT: Final = 0x4207
PTRACE_DETACH: Final = 17
WALL: Final = 0x4000_0000  # waitpid: a tracee that is not our child
_KEPT: list[int] = []  # the fds `_leave` keeps open
LEFT_IN: Final = ("/tmp", "/dev/shm", "/tmp/app")  # shared ones, and a jailed app's own


def _outcome(attempt: Any) -> str:
    try:
        attempt()
    except Exception as exc:
        return f"{exc.__class__.__name__}: {exc}"
    return "ok"


def _read(path: str) -> None:
    Path(path).read_bytes()


def _open_db(path: str) -> None:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()


def _connect(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2.0):
        pass


def _write(path: str) -> None:
    Path(path).write_text("written by the probe\n")


def _status(field: str) -> str:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def _ptrace(pid: int) -> None:
    """Attach to `pid` (PTRACE_SEIZE), then let it go: stopped for the detach (a tracee
    left attached would stop at its next signal, waiting for us)."""
    libc = ctypes.CDLL(None, use_errno=True)

    def ptrace(request: int) -> None:
        args = (ctypes.c_long(pid), ctypes.c_void_p(0), ctypes.c_void_p(0))
        if libc.ptrace(ctypes.c_long(request), *args) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno))

    ptrace(PTRACE_SEIZE)
    ptrace(PTRACE_INTERRUPT)
    os.waitpid(pid, WALL)
    ptrace(PTRACE_DETACH)


def _leave(mark: str) -> dict[str, str]:
    """Traces an app could hope the next app forked from the same parent finds: a module's
    global, a module of its own, the environment, an inheritable fd, files wherever it
    tries (the outcome of each file's write)."""
    trio.LEFT_BY_AN_APP = mark  # type: ignore[attr-defined]
    sys.modules["left_by_an_app"] = types.ModuleType(mark)
    os.environ["LEFT_BY_AN_APP"] = mark
    fd = os.open("left-open.txt", os.O_CREAT | os.O_WRONLY, 0o600)
    os.set_inheritable(fd, True)
    _KEPT.append(fd)
    return {
        directory: _outcome(lambda d=directory: Path(d, "left-by-an-app").write_text(mark))
        for directory in LEFT_IN
    }


def _leftovers() -> dict[str, Any]:
    return {
        "global": getattr(trio, "LEFT_BY_AN_APP", None),
        "module": "left_by_an_app" in sys.modules,
        "env": os.environ.get("LEFT_BY_AN_APP"),
        "fds": sorted(t for t in _fds().values() if t.endswith("left-open.txt")),
        "files": sorted(
            f"{d}/{n}"
            for d in LEFT_IN
            if os.path.isdir(d)  # /tmp/app: in a jail only
            for n in os.listdir(d)
            if n.startswith("left-by")
        ),
    }


def _fds() -> dict[str, str]:
    out = {}
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            out[name] = os.readlink(f"/proc/self/fd/{name}")
    return out


class Probe(Actor):
    """Body of `probe`: `read` (name -> file), `databases` (name -> SQLite file), `list`
    (name -> directory), `write` (name -> file), `port` (a loopback TCP listener); optional:
    `processes` (name -> a host pid to signal and to trace), `leave` (a mark to leave
    behind, `_leave`)."""

    @handles("probe")
    async def probe(self, msg: Message) -> dict[str, Any]:
        body = msg.body
        log = EventLog(self.config["app_dir"])  # the SDK's event log, where the app sees it
        try:
            log.add_action(msg.id, {"id": msg.id, "action": "send_text", "text": "probe"})
            logged = len(list(log.events()))
        finally:
            log.close()
        return {
            "uid": os.getuid(),
            "gid": os.getgid(),
            "groups": os.getgroups(),
            "netns": os.readlink("/proc/self/ns/net"),
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "config": self.config,
            "no_new_privs": _status("NoNewPrivs"),
            "cap_eff": _status("CapEff"),
            "fds": _fds(),
            "logged": logged,
            "read": {k: _outcome(lambda p=p: _read(p)) for k, p in body["read"].items()},
            "databases": {
                k: _outcome(lambda p=p: _open_db(p)) for k, p in body["databases"].items()
            },
            "list": {k: _outcome(lambda p=p: os.listdir(p)) for k, p in body["list"].items()},
            "write": {k: _outcome(lambda p=p: _write(p)) for k, p in body["write"].items()},
            "tcp": _outcome(lambda: _connect(body["port"])),
            "signal": {
                k: _outcome(lambda p=p: os.kill(p, 0)) for k, p in body.get("processes", {}).items()
            },
            "ptrace": {
                k: _outcome(lambda p=p: _ptrace(p)) for k, p in body.get("processes", {}).items()
            },
            "left": _leave(body["leave"]) if "leave" in body else None,
            "leftovers": _leftovers(),
        }
