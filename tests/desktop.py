"""A desktop of the tests' own: a session bus (`dbus-daemon`), an X server with no screen
(`Xvfb`) and Debian's notification server on them (`dunst`), whose history is read back
with `dunstctl`. The bus starts no service by itself (its configuration names no service
directory), so what owns the notifications' name is the dunst started here, or nothing."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""
START_S = 10.0


@dataclass(frozen=True)
class Desktop:
    bus: str  # the session bus's address
    env: dict[str, str]  # what a process needs to reach it (and the X server)

    def dunstctl(self, *args: str) -> str:
        done = subprocess.run(
            ["dunstctl", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def shown(self, *fields: str) -> list[dict[str, str]]:
        """Every notification dunst has shown, oldest first: the ones on screen are closed
        into its history first. Each as {appname, summary, body}, or the `fields` named
        (`message`: the markup dunst draws, its own format around the summary and body)."""
        self.dunstctl("close-all")
        history: dict[str, Any] = json.loads(self.dunstctl("history"))
        notes = [
            {key: str(note[key]["data"]) for key in fields or ("appname", "summary", "body")}
            for note in history["data"][0]
        ]
        return list(reversed(notes))  # dunst lists the newest first


def _started(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[str]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=out, text=True, start_new_session=True
        )


def _stop(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _first_line(process: subprocess.Popen[str], what: str) -> str:
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line, f"{what} did not start (exit {process.poll()})"
    return line


@contextlib.contextmanager
def bus_only(where: Path) -> Iterator[Desktop]:
    """A session bus with no notification service on it."""
    where.mkdir(parents=True, exist_ok=True)
    config = where / "bus.conf"
    config.write_text(BUS_CONFIG.format(socket=where / "bus"))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    bus = _started(
        ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
        env,
        where / "dbus.log",
    )
    try:
        address = _first_line(bus, "dbus-daemon")
        yield Desktop(address, {**env, "DBUS_SESSION_BUS_ADDRESS": address})
    finally:
        _stop(bus)


@contextlib.contextmanager
def desktop(where: Path) -> Iterator[Desktop]:
    """A session bus with dunst serving its notifications, on an X server of its own."""
    with bus_only(where) as bus:
        xvfb = _started(
            ["Xvfb", "-displayfd", "1", "-screen", "0", "640x480x24", "-nolisten", "tcp"],
            bus.env,
            where / "xvfb.log",
        )
        dunst: subprocess.Popen[str] | None = None
        try:
            env = {**bus.env, "DISPLAY": f":{_first_line(xvfb, 'Xvfb')}"}
            dunst = _started(["dunst"], env, where / "dunst.log")
            shown = Desktop(bus.bus, env)
            deadline = time.monotonic() + START_S
            while True:  # dunst answers on the bus once it owns the notifications' name
                done = subprocess.run(
                    ["dunstctl", "is-paused"], env=env, capture_output=True, check=False
                )
                if done.returncode == 0:
                    break
                assert dunst.poll() is None, (where / "dunst.log").read_text()
                assert time.monotonic() < deadline, "dunst did not take the bus in time"
                time.sleep(0.02)  # a poll of another process's start, bounded above
            yield shown
        finally:
            for process in (dunst, xvfb):
                if process is not None:
                    _stop(process)
