"""A sound server of the tests' own: PulseAudio with a null sink (`lineup`) whose monitor is
the default source, so what is played into the sink (`paplay`) is what a recorder hears.
It answers on a socket in the test's folder (`PULSE_SERVER`), with no login session, no
D-Bus and no cookie (anonymous access on that socket only)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

START_S = 10.0
SINK = "lineup"


@dataclass(frozen=True)
class SoundServer:
    env: dict[str, str]  # what a process needs to reach it (`PULSE_SERVER`)

    def play(self, wav: Path, times: int = 1) -> subprocess.Popen[bytes]:
        """Play `wav` into the sink `times` times, in the background."""
        loop = f"for n in $(seq {times}); do paplay --device={SINK} '{wav}'; done"
        return subprocess.Popen(["sh", "-c", loop], env={**os.environ, **self.env})


def _pactl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["pactl", *args], env=env, capture_output=True, text=True, timeout=10, check=False
    )


@contextlib.contextmanager
def sound_server(folder: Path) -> Iterator[SoundServer]:
    """PulseAudio on `folder/native` until the block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run").mkdir(mode=0o700, exist_ok=True)
    socket = folder / "native"
    env = {"PULSE_SERVER": f"unix:{socket}"}
    own = {**os.environ, "HOME": str(folder), "XDG_RUNTIME_DIR": str(folder / "run"), **env}
    command = [
        "pulseaudio",
        "--daemonize=no",
        "--exit-idle-time=-1",
        "--use-pid-file=no",
        "-n",  # no default script: only the modules named here
        f"--load=module-native-protocol-unix socket={socket} auth-anonymous=1",
        f"--load=module-null-sink sink_name={SINK}",
    ]
    with open(folder / "pulseaudio.log", "ab") as log:
        server = subprocess.Popen(command, env=own, stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + START_S
        while _pactl(env, "info").returncode != 0:
            assert server.poll() is None, f"pulseaudio exited {server.returncode}"
            assert time.monotonic() < deadline, "pulseaudio did not answer"
            time.sleep(0.05)
        done = _pactl(env, "set-default-source", f"{SINK}.monitor")
        assert done.returncode == 0, done.stderr
        yield SoundServer(env)
    finally:
        server.kill()
        server.wait()
