"""The runtime `lineup bench apps` measures: the real supervisor with the default children
(`python -m supervisor`, offline) on a fresh data dir that trusts the bench's signing key,
and the requests the `lineup app` CLI makes to its app manager.

Waits poll a cheap condition (an operation's row, the control socket's `actors`) every
`POLL_S` against a deadline; nothing sleeps in place of a condition. A time measured by
polling is known to within one interval, which the report states.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ._procs import BenchError, Processes

T = TypeVar("T")
POLL_S = 0.005
TERMINAL = ("succeeded", "failed", "rolled_back")


def wait_for(
    predicate: Callable[[], T | None], timeout: float, what: str, *, every: float = POLL_S
) -> T:
    """Poll `predicate` until it returns something truthy; BenchError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def process_memory(pid: int) -> dict[str, float]:
    """VmRSS (/proc/PID/status) and Pss (/proc/PID/smaps_rollup) of one process, in MiB."""
    found: dict[str, float] = {}
    for path, field, key in (
        (f"/proc/{pid}/status", "VmRSS:", "rss_mib"),
        (f"/proc/{pid}/smaps_rollup", "Pss:", "pss_mib"),
    ):
        try:
            with open(path) as lines:
                for line in lines:
                    if line.startswith(field):
                        found[key] = int(line.split()[1]) / 1024
                        break
        except OSError as exc:
            raise BenchError(f"cannot read the memory of pid {pid}: {exc}") from None
    if len(found) != 2:
        raise BenchError(f"no VmRSS or Pss for pid {pid}")
    return found


class AppsRuntime:
    """One supervisor on `work/NAME`, its app manager driven as `lineup app ...` drives it;
    its installed apps launched by `app_launch` (from the app zygote, or exec'd)."""

    def __init__(
        self, procs: Processes, work: Path, trusted_key: Path, *, name: str, app_launch: str
    ) -> None:
        self.procs = procs
        self.work = work
        self.name = name  # short: the control socket's path (DATA_DIR/control.sock) is bounded
        self.data_dir = work / name
        self.trusted_key = trusted_key
        self.app_launch = app_launch
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 90.0) -> None:
        """Start the supervisor and wait until its app manager has loaded the registry.

        Restart intensity and backoff are raised / zeroed, as in `lineup bench kernel`:
        they are policy, and the restart figure is the mechanism's."""
        from actors import runtime_children

        trusted = self.data_dir / "trusted_keys"
        trusted.mkdir(parents=True)
        shutil.copy(self.trusted_key, trusted / self.trusted_key.name)
        config = runtime_children.default_config(self.data_dir).model_copy(
            update={
                "max_restarts": 1000,
                "max_seconds": 1.0,
                "backoff_base": 0.0,
                "app_launch": self.app_launch,
            }
        )
        config_file = self.work / f"{self.name}.json"
        config_file.write_text(config.model_dump_json())
        args = ["--", "--data-dir", str(self.data_dir), "--config", str(config_file)]
        self.process = self.procs.start(self.name, "bench._supervise", args)
        wait_for(self._registry_loaded, timeout, "the runtime and its app manager", every=0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.procs.stop(self.process)
            self.process = None

    def _alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise BenchError(f"the supervisor exited{self.procs.tail(self.name)}")

    def _registry_loaded(self) -> bool:
        from actors.app_manager.registry import read_apps

        self._alive()
        try:
            return bool(read_apps(self.data_dir)["settings"].get("focus_stack"))
        except Exception:  # runtime.db not created yet, or mid-creation
            return False

    def control(self, request: dict[str, Any]) -> dict[str, Any]:
        from actors.kernel import ControlError, control_request

        self._alive()
        try:
            return control_request(self.data_dir, request)
        except ControlError as exc:
            raise BenchError(f"control request {request['type']}: {exc}") from None

    # -- operations ------------------------------------------------------------------------

    def operation(self, kind: str, timeout: float = 120.0, **fields: Any) -> float:
        """One `app_manager.request`, as `lineup app KIND` sends it; the ms from the
        request to its operation's row `succeeded` (BenchError if it ends otherwise)."""
        from actors.kernel import new_id

        operation_id = new_id()
        body = {"operation_id": operation_id, "kind": kind, **fields}
        request = {"type": "send", "to": "app_manager", "message_type": "app_manager.request"}
        started = time.perf_counter()
        self.control({**request, "body": body})
        row = wait_for(lambda: self._ended(operation_id), timeout, f"the {kind} operation")
        elapsed_ms = (time.perf_counter() - started) * 1e3
        if row["state"] != "succeeded":
            raise BenchError(f"{kind} {row['state']}: {row['code']}: {row['detail']}")
        return elapsed_ms

    def _ended(self, operation_id: str) -> dict[str, Any] | None:
        from actors.app_manager.registry import read_apps

        self._alive()
        for row in read_apps(self.data_dir)["operations"]:
            if row["operation_id"] == operation_id and row["state"] in TERMINAL:
                return dict(row)
        return None

    # -- actors ----------------------------------------------------------------------------

    def actor(self, name: str) -> dict[str, Any] | None:
        """The control socket's `actors` record of `name`, or None if it has no child."""
        actors = self.control({"type": "actors"})["actors"]
        return next((dict(a) for a in actors if a["name"] == name), None)

    def running_pid(self, name: str) -> int:
        actor = self.actor(name)
        if actor is None or actor["state"] != "running" or not actor["pid"]:
            raise BenchError(f"{name} is not running: {actor}")
        return int(actor["pid"])

    def wait_gone(self, name: str, timeout: float = 30.0) -> None:
        wait_for(lambda: self.actor(name) is None, timeout, f"{name} to be gone")

    def restart_after_kill(self, name: str, timeout: float = 30.0) -> float:
        """SIGKILL `name`'s process (control `kill`); the ms until the control socket shows
        it `running` again with another pid (polled every POLL_S)."""
        killed_pid = self.running_pid(name)
        started = time.perf_counter()
        self.control({"type": "kill", "name": name})

        def back() -> bool:
            # Between the death and the supervisor's reaction the record still says
            # `running`, with no pid: only a pid of its own marks the next incarnation.
            actor = self.actor(name) or {}
            pid = actor.get("pid")
            return actor.get("state") == "running" and pid is not None and pid != killed_pid

        wait_for(back, timeout, f"{name} to run again after SIGKILL")
        return (time.perf_counter() - started) * 1e3
