"""A session bus and a keyring of the test's own: `dbus-daemon --session` and GNOME
Keyring's Secret Service on it, its login keyring made and unlocked with a password on
standard input, as a desktop session's login does. Both stop when the block ends."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from actors.runtime_token import keyring_locked, keyring_present

PASSWORD = b"the test's login password"


@contextlib.contextmanager
def session_keyring(base: Path, *, timeout: float = 20.0) -> Iterator[dict[str, str]]:
    """The environment of a desktop session whose keyring is up and unlocked."""
    home, runtime_dir = base / "home", base / "run"
    for directory in (home, runtime_dir):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    with contextlib.ExitStack() as running:
        bus = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--print-address=1",
             f"--address=unix:path={runtime_dir / 'bus'}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
        )  # fmt: skip
        running.callback(_stop, bus)
        assert bus.stdout is not None
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().strip()
        assert env["DBUS_SESSION_BUS_ADDRESS"], "dbus-daemon printed no address"
        keyring = subprocess.Popen(
            ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        running.callback(_stop, keyring)
        assert keyring.stdin is not None
        keyring.stdin.write(PASSWORD)
        keyring.stdin.close()
        deadline = time.monotonic() + timeout
        while not (keyring_present(env) and not keyring_locked(env)):
            assert keyring.poll() is None, "gnome-keyring-daemon ended"
            assert time.monotonic() < deadline, "the keyring did not come up unlocked"
            time.sleep(0.02)
        yield env


def _stop(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    if process.stdout is not None:
        process.stdout.close()


def lock(env: dict[str, str]) -> None:
    """Lock the login keyring, as the desktop does when the screen locks."""
    from jeepney.io.blocking import open_dbus_connection
    from secretstorage import get_collection_by_alias

    with contextlib.closing(open_dbus_connection(env["DBUS_SESSION_BUS_ADDRESS"])) as bus:
        get_collection_by_alias(bus, "default").lock()


def items(env: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
    """Every item of the login keyring: its label and its attributes."""
    from jeepney.io.blocking import open_dbus_connection
    from secretstorage import get_collection_by_alias

    with contextlib.closing(open_dbus_connection(env["DBUS_SESSION_BUS_ADDRESS"])) as bus:
        found = get_collection_by_alias(bus, "default").get_all_items()
        return [(item.get_label(), dict(item.get_attributes())) for item in found]
