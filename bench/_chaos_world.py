"""The world `lineup bench chaos` runs and breaks: a reference AppServer process, `lineup run`
on a data dir of its own small file system, and the three sample apps installed in it.

Both processes can be killed and started again on the same files: the AppServer keeps its
port (the runtime and the agent reconnect to the same address), the runtime its data dir.
The data dir is a size-limited tmpfs, so that the bench can fill it up; where no file
system can be mounted the bench says so and runs without the disk fault.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from ._e2e_procs import AppServerProcess, RuntimeProcess, wait_for
from ._procs import BenchError, Processes
from ._tools_app import lineup

SAMPLE_APPS = {
    "whiteboard": "whiteboard",
    "draw_and_guess": "draw-and-guess",
    "pomodoro": "pomodoro",
}
UPDATED_APP = "pomodoro"  # the app updated to a second version, then rolled back
KEY_NAME = "chaos"
# Room for the runtime's files, which grow with the run (a 30-minute soak outgrew 256 MiB);
# the ballast takes the rest when the disk is to be full.
DATA_DIR_MIB = 256
DATA_DIR_MIB_PER_MINUTE = 24


@dataclass(frozen=True)
class Bundles:
    public_key: Path
    first: dict[str, Path]  # app scope -> its signed bundle
    second: Path  # the updated app's next version


def _build(source: Path, bundle: Path, key: Path) -> None:
    lineup("app", "build", source, "--out", bundle)
    lineup("app", "sign", bundle, "--key", key)


def build_bundles(work: Path, packages: Iterable[str] = SAMPLE_APPS) -> Bundles:
    """The sample apps (`packages`, which hold the updated app) built and signed with a
    fresh key, and a second version of the updated app (its manifest's version raised in a
    copy of its source)."""
    import apps

    root = Path(apps.__file__).parent
    keys = work / "keys"
    lineup("app", "keygen", "--out", keys, "--name", KEY_NAME)
    key = keys / f"{KEY_NAME}.key"
    first: dict[str, Path] = {}
    for package in packages:
        scope = SAMPLE_APPS[package]
        source = work / "source" / package
        shutil.copytree(root / package, source, ignore=shutil.ignore_patterns("__pycache__"))
        first[scope] = work / f"{package}.bundle"
        _build(source, first[scope], key)
    source = work / "source" / UPDATED_APP
    app_module = source / "_app.py"
    text = app_module.read_text()
    if 'version="0.1.0"' not in text:
        raise BenchError(f"cannot find the version of {UPDATED_APP} to make a second one")
    app_module.write_text(text.replace('version="0.1.0"', 'version="0.1.1"', 1))
    second = work / f"{UPDATED_APP}-2.bundle"
    _build(source, second, key)
    return Bundles(keys / f"{KEY_NAME}.pub", first, second)


class FaultyAppServer(AppServerProcess):
    """`lineup appserver` started again on the same files and port, with or without its
    fault options (drops, duplicates, delays)."""

    def __init__(self, procs: Processes, data_dir: Path) -> None:
        super().__init__(procs, data_dir, "appserver")
        self.start_timeout = 60.0  # a restart may come while the machine is busy

    async def restart(self, options: list[str], *, kill: bool) -> None:
        if self.process is not None:
            if kill:
                self.process.kill()
            self.procs.stop(self.process)
            self.process = None
        self.options = options
        await self.start()


class Runtime(RuntimeProcess):
    """`lineup run --headless --appserver URL`, killed and started again on its data dir."""

    def __init__(self, procs: Processes, data_dir: Path, *, synchronous: str) -> None:
        super().__init__(procs, data_dir, "runtime")
        self.url = ""
        self.token = ""
        self.synchronous = synchronous

    def begin(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.start(url=url, token=token, options=["--synchronous", self.synchronous])

    async def kill_and_restart(self) -> None:
        """SIGKILL the root `lineup run`, wait until every process it started is gone (its
        children follow it), then start it again on the same data dir."""
        assert self.process is not None
        self.process.kill()
        self.reap()
        await wait_for(lambda: not self.leftovers(), 60, "the killed runtime's processes to end")
        await self.start_again()

    def reap(self) -> None:
        """Wait for the root `lineup run`, killed by the bench or by a power cut."""
        process, self.process = self.process, None
        assert process is not None
        process.wait()
        self.procs.started = [(n, p) for n, p in self.procs.started if p is not process]

    async def start_again(self, timeout: float = 120) -> None:
        """`lineup run` on the same data dir, until it is online. The token file is there
        from the first start (and the disk may be full now)."""
        args = ["run", "--headless", "--data-dir", str(self.data_dir), "--log-level", "WARNING"]
        args += ["--synchronous", self.synchronous, "--appserver", self.url]
        self.started_ns = time.time_ns()
        self.process = self.procs.spawn(self.name, args)
        await self.wait_online(timeout)

    def leftovers(self) -> list[int]:
        """Processes still running out of this data dir's runtime (by their environment
        or command line naming the data dir)."""
        mark = str(self.data_dir).encode()
        found = []
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                if (
                    mark in (entry / "cmdline").read_bytes()
                    or mark in (entry / "environ").read_bytes()
                ):
                    found.append(int(entry.name))
            except OSError:
                continue
        return [pid for pid in found if pid != os.getpid() and _alive(pid)]

    def actors(self) -> list[dict[str, Any]]:
        """The live runtime's actors with their pids (`lineup debug actors`' source)."""
        from actors.kernel import ControlError, control_request

        try:
            return list(control_request(self.data_dir, {"type": "actors"}, timeout=5)["actors"])
        except (ControlError, OSError):
            return []

    def status(self) -> dict[str, Any] | None:
        from actors.kernel import ControlError, control_request

        try:
            return control_request(self.data_dir, {"type": "status"}, timeout=5)
        except (ControlError, OSError):
            return None


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def install_apps(runtime: Runtime, bundles: Bundles) -> None:
    """Trust the key (saved whole: a power cut must not take what the user put there),
    then `lineup app install` and `enable` each app, as a user does."""
    from contracts import replace_file

    trusted = runtime.data_dir / "trusted_keys"
    trusted.mkdir(parents=True, exist_ok=True)
    replace_file(trusted / bundles.public_key.name, bundles.public_key.read_bytes(), mode=0o644)
    data_dir = ("--data-dir", runtime.data_dir)
    for scope, bundle in bundles.first.items():
        await trio.to_thread.run_sync(lineup, "app", "install", bundle, *data_dir)
        await trio.to_thread.run_sync(lineup, "app", "enable", scope, *data_dir)


class SmallDisk:
    """A size-limited tmpfs mounted on the runtime's data dir (as root), and the ballast
    file that fills it up; `None` from `mount` where no file system can be mounted."""

    def __init__(self, mount_point: Path) -> None:
        self.mount_point = mount_point
        self.ballast = mount_point / "ballast"

    @classmethod
    def mount(cls, mount_point: Path, minutes: float) -> SmallDisk | None:
        mount_point.mkdir(parents=True, exist_ok=True)
        size = DATA_DIR_MIB + round(DATA_DIR_MIB_PER_MINUTE * minutes)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}m,mode=0700", "chaos", mount_point],
            capture_output=True,
            check=False,
        )
        return cls(mount_point) if done.returncode == 0 else None

    def fill(self) -> int:
        """Write the ballast until the file system is full; its size in bytes (0 when the
        runtime's own files had filled it already)."""
        chunk = b"\0" * (1 << 20)
        written = 0
        try:
            # Unbuffered: what the file system refuses is never kept to be written again
            # (and refused again) when the file closes.
            ballast = open(self.ballast, "wb", buffering=0)  # noqa: SIM115 - closed below
        except OSError:  # no room even for its name: full already
            return 0
        with ballast, contextlib.suppress(OSError):  # ENOSPC: full, as meant
            while True:
                done = ballast.write(chunk)
                if not done:
                    break
                written += done
        return written

    def free(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.ballast.unlink()

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", self.mount_point], capture_output=True, check=False)


def stop_quickly(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)


def monotonic_ms() -> float:
    return time.monotonic() * 1000
