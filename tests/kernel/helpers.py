"""Running a real supervisor in a subprocess, and waiting on conditions with deadlines.

Every kernel test that needs processes goes through `Runtime`: it writes the test's
`RuntimeConfig` as JSON, starts `python -m supervisor` with the repo root on `PYTHONPATH`
(so `tests.kernel.sample_actors` imports in the actor processes), talks to the control
socket, and can find the actor processes of a given supervisor by their command line
(`python -m actors.kernel.actor_process.child TARGET FD SUPERVISOR_PID`), which stays true after a
supervisor died and its children were re-parented: that is how orphans are detected.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgpack

from actors.kernel import ControlError, control_request

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = "tests.kernel.sample_actors"

T = TypeVar("T")

ZYGOTE_MODULE = "actors.kernel.spawning.zygote"  # an exec'd zygote's `-m`
CHILD_MODULE = "actors.kernel.actor_process.child"  # an exec'd actor's `-m`


def wait_until(
    predicate: Callable[[], T | None], timeout: float, what: str, *, interval: float = 0.02
) -> T:
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def target(cls: str) -> str:
    return f"{SAMPLES}:{cls}"


def child(name: str, cls: str, **fields: Any) -> dict[str, Any]:
    """A ChildSpec as JSON, for a sample actor class."""
    return {"name": name, "target": target(cls), **fields}


# -- processes -------------------------------------------------------------------------------


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")[:-1]


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def parent_pid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def runtime_processes(supervisor: subprocess.Popen[bytes]) -> list[int]:
    """Live processes this supervisor started, even if re-parented: exec'd actors and
    zygotes, whose command lines name its pid, and what was forked from it (its first
    zygote and the actors that zygote forked), which carries its own command line."""
    own = [str(arg) for arg in supervisor.args] if isinstance(supervisor.args, list) else []
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        argv = cmdline(pid)
        execd = argv[1:3] == ["-m", CHILD_MODULE] and argv[5:6] == [str(supervisor.pid)]
        zygote = argv[1:3] == ["-m", ZYGOTE_MODULE] and argv[3:4] == [str(supervisor.pid)]
        forked = argv == own and pid != supervisor.pid
        if (execd or zygote or forked) and not _is_zombie(pid):
            found.append(pid)
    return found


def actor_processes(supervisor: subprocess.Popen[bytes]) -> list[int]:
    """The actor processes among `runtime_processes`: all but the zygote itself (the one
    of them whose parent is not one of them)."""
    processes = runtime_processes(supervisor)
    return [
        pid
        for pid in processes
        if cmdline(pid)[1:3] == ["-m", CHILD_MODULE] or parent_pid(pid) in processes
    ]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not _is_zombie(pid)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


# -- the actors' own records -----------------------------------------------------------------


@contextlib.contextmanager
def _read_db(path: Path) -> Iterator[sqlite3.Connection | None]:
    if not path.exists():
        yield None
        return
    with contextlib.closing(sqlite3.connect(path, timeout=10)) as db:
        yield db


def recorded(path: Path) -> list[tuple[str, str, int]]:
    """A Recorder's items, in the order it applied them: (message id, sender, n)."""
    with _read_db(path) as db:
        if db is None:
            return []
        try:
            return list(db.execute("SELECT id, sender, n FROM items ORDER BY pos"))
        except sqlite3.OperationalError:  # the table is not created yet
            return []


def recorded_count(path: Path) -> int:
    with _read_db(path) as db:
        if db is None:
            return 0
        try:
            return int(db.execute("SELECT count(*) FROM items").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def notices(path: Path) -> list[tuple[str, str]]:
    """The kernel notices a Recorder received: (type, failed actor's name)."""
    with _read_db(path) as db:
        if db is None:
            return []
        try:
            return list(db.execute("SELECT type, name FROM notices ORDER BY pos"))
        except sqlite3.OperationalError:
            return []


def outcomes(path: Path) -> dict[str, tuple[str, Any, str | None]]:
    """A Caller's recorded call outcomes: key -> ("ok", reply body, None) or ("failed", None,
    the CallFailed code)."""
    with _read_db(path) as db:
        if db is None:
            return {}
        try:
            rows = list(db.execute("SELECT key, outcome, value, code FROM outcomes"))
        except sqlite3.OperationalError:
            return {}
    return {
        key: (outcome, None if value is None else msgpack.unpackb(value), code)
        for key, outcome, value, code in rows
    }


def per_sender(items: list[tuple[str, str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for _, sender, n in items:
        out.setdefault(sender, []).append(n)
    return out


def assert_exactly_once_in_order(
    items: list[tuple[str, str, int]], expected: dict[str, int]
) -> None:
    """Each sender's items 0..count-1 applied once each, in the order the sender sent them."""
    ids = [item_id for item_id, _, _ in items]
    assert len(ids) == len(set(ids)), "a message was applied twice"
    got = per_sender(items)
    assert sorted(got) == sorted(expected), f"senders {sorted(got)} != {sorted(expected)}"
    for sender, count in expected.items():
        assert got[sender] == list(range(count)), (
            f"{sender}: {len(got[sender])} items, first out of order at index "
            f"{next((i for i, n in enumerate(got[sender]) if n != i), None)}"
        )


# -- the supervisor ----------------------------------------------------------------------------


class Runtime:
    """One supervisor process on one data dir; start it again on the same dir to recover."""

    def __init__(self, data_dir: Path, config: dict[str, Any], *, log_dir: Path) -> None:
        self.data_dir = data_dir
        self.config = config
        self.log_dir = log_dir
        self.process: subprocess.Popen[bytes] | None = None
        self.started: list[subprocess.Popen[bytes]] = []  # every supervisor it has had
        self.runs = 0

    # lifecycle

    def start(
        self,
        *,
        config: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        wait: bool = True,
    ) -> Runtime:
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("this runtime is already running")
        if self.process is not None:
            self.process.wait()
        if config is not None:
            self.config = config
        self.runs += 1
        config_path = self.log_dir / f"config-{self.runs}.json"
        config_path.write_text(json.dumps(self.config))
        # A test's runtime shows nothing on the desktop of whoever runs the tests: a test
        # that wants a session bus passes its own.
        full_env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("LINEUP_CRASH", "DBUS_SESSION_BUS_ADDRESS")
        }
        full_env["PYTHONPATH"] = str(REPO_ROOT)
        full_env.update(env or {})
        with open(self.log_path, "ab") as log:
            log.write(f"--- run {self.runs} ---\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "supervisor",
                    "--data-dir",
                    str(self.data_dir),
                    "--config",
                    str(config_path),
                ],
                cwd=REPO_ROOT,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        self.started.append(self.process)
        if wait:
            self.wait_running()
        return self

    def wait_running(self, timeout: float = 30.0) -> dict[str, Any]:
        def up() -> dict[str, Any] | None:
            if not self.alive:
                raise AssertionError(f"the supervisor exited early:\n{self.log()[-3000:]}")
            try:
                status = self.control({"type": "status"}, timeout=2.0)
            except ControlError:
                return None
            return status if status["state"] in ("running", "degraded") else None

        return wait_until(up, timeout, "the supervisor to be running")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_exit(self, timeout: float) -> int:
        assert self.process is not None
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the supervisor did not exit within {timeout} s:\n{self.log()[-3000:]}"
            ) from None

    def stop(self, timeout: float = 20.0) -> int:
        """Stop it the way Ctrl-C would (SIGTERM) and wait for it to exit."""
        assert self.process is not None
        if self.alive:
            self.process.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def kill9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def cleanup(self) -> list[int]:
        """SIGTERM, then SIGKILL; returns orphan actor pids found afterwards (and kills them)."""
        if self.process is not None and self.alive:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        orphans: list[int] = []
        with contextlib.suppress(AssertionError):
            wait_until(
                lambda: not any(runtime_processes(process) for process in self.started),
                5.0,
                "the actor processes to exit",
            )
        for process in self.started:
            for orphan in runtime_processes(process):
                orphans.append(orphan)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(orphan, signal.SIGKILL)
        return orphans

    # control socket

    def control(self, request: dict[str, Any], *, timeout: float = 10.0) -> dict[str, Any]:
        return control_request(self.data_dir, request, timeout=timeout)

    def status(self) -> dict[str, Any]:
        return self.control({"type": "status"})

    def actors(self) -> dict[str, dict[str, Any]]:
        return {a["name"]: a for a in self.control({"type": "actors"})["actors"]}

    def send(self, to: str, message_type: str, body: Any = None, *, id: str | None = None) -> str:
        request: dict[str, Any] = {"type": "send", "to": to, "message_type": message_type}
        request["body"] = body
        if id is not None:
            request["id"] = id
        return str(self.control(request)["id"])

    def mailbox(self, name: str, *, dead: bool = False, limit: int = 100) -> list[dict[str, Any]]:
        request = {"type": "mailbox", "name": name, "dead": dead, "body": True, "limit": limit}
        return list(self.control(request)["messages"])

    def pid_of(self, name: str) -> int | None:
        pid = self.actors()[name]["pid"]
        return None if pid is None else int(pid)

    def wait_actor(self, name: str, timeout: float = 20.0, **expect: Any) -> dict[str, Any]:
        """Wait until actor `name` is running (with a pid) and its record matches `expect`."""

        def matches() -> dict[str, Any] | None:
            record = self.actors().get(name)
            if record is None:
                return None
            wanted = {"state": "running", **expect}
            if any(record.get(k) != v for k, v in wanted.items()):
                return None
            if wanted["state"] == "running" and record["pid"] is None:
                return None
            return record

        return wait_until(matches, timeout, f"{name} to be {expect or 'running'}")

    def wait_drained(self, name: str, timeout: float) -> None:
        def empty() -> bool:
            record = self.actors()[name]
            return bool(record["pending"] == 0 and record["inflight"] == 0)

        wait_until(empty, timeout, f"{name}'s mailbox to drain")

    def actor_pids(self) -> list[int]:
        assert self.process is not None
        return actor_processes(self.process)

    # the supervisor's log (stdout and stderr)

    @property
    def log_path(self) -> Path:
        return self.log_dir / "supervisor.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
