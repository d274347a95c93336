"""Every process the bench starts, so that every one of them is stopped at the end.

Children run in their own sessions: a Ctrl-C in the terminal reaches only the bench, which
then stops them in reverse start order (SIGTERM, so the supervisor stops its actors in
order; SIGKILL for whatever has not exited after a grace period). Each child also arms a
parent-death signal, for the case where the bench itself is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any


class BenchError(Exception):
    """A measured process failed; the message carries the end of its log."""


class Processes:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(
        self, name: str, module: str, args: list[str], *, pass_fds: tuple[int, ...] = ()
    ) -> subprocess.Popen[bytes]:
        """`python -m module --parent OUR_PID args`, stdout piped, stderr to a log file."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{name}.log", "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", module, "--parent", str(os.getpid()), *args],
                pass_fds=pass_fds,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        self.started.append((name, process))
        return process

    def spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        """`lineup args` (through `_tied`: SIGTERM if the bench dies, so it still stops in
        order), stdout and stderr to its log file."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # Without the session bus, a bench's runtime keeps its token in its temp dir's file
        # and leaves no item in the keyring of the person running it.
        env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
        with open(self.log_dir / f"{name}.log", "ab") as log:
            tied = ["-m", "bench._tied", "--parent", str(os.getpid()), "--"]
            process = subprocess.Popen(
                [sys.executable, *tied, *args],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        self.started.append((name, process))
        return process

    def stop(self, process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
        """SIGTERM one child and wait for it (SIGKILL after `grace` seconds)."""
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self.started = [(n, p) for n, p in self.started if p is not process]

    def result(self, name: str, process: subprocess.Popen[bytes], timeout: float) -> Any:
        """The JSON a helper printed on exit; BenchError if it failed or took too long."""
        try:
            out, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise BenchError(f"{name} did not finish in {timeout:.0f} s{self.tail(name)}") from None
        if process.returncode != 0:
            raise BenchError(f"{name} exited with {process.returncode}{self.tail(name)}")
        return json.loads(out or b"{}")

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.log_dir / f"{name}.log"
        if not path.exists():
            return ""
        text = path.read_text(errors="replace").splitlines()[-lines:]
        return "\n" + "\n".join(f"  {name}| {line}" for line in text) if text else ""

    def stop_all(self, grace: float = 10.0) -> None:
        """Stop every child still running, newest first; never leaves one behind."""
        for _, process in reversed(self.started):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for _, process in reversed(self.started):
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        self.started.clear()
