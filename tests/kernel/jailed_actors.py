"""The actor the isolation tests run jailed: it tries what an installed app must not do.

`probe` answers with the outcome of every attempt ("ok", or the error it met) and with what
the process is (ids, namespace, environment, fds). The same class runs unjailed as the
control: there every attempt must succeed, so a jailed failure means the jail, not a
wrong path in the test.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
from pathlib import Path
from typing import Any

from actors.kernel import Actor, Message, handles
from apps.sdk import EventLog


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


def _fds() -> dict[str, str]:
    out = {}
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            out[name] = os.readlink(f"/proc/self/fd/{name}")
    return out


class Probe(Actor):
    """Body of `probe`: `read` (name -> file), `databases` (name -> SQLite file), `list`
    (name -> directory), `write` (name -> file), `port` (a loopback TCP listener)."""

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
        }
