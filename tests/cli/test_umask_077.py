"""Installed apps start for a user whose umask is 077, as a new user's may be.

Everything here runs as that user would run it, under `umask 077`: `lineup run --headless`
on a fresh data dir, and every `lineup` command, each a process of its own. The sample apps
are built, signed, installed, enabled and launched through the command line, and each
answers a call; a `lineup app new` app's own generated test passes; a cache entry whose
modes a umask cut is restored before its code runs; an app that does not start is said so
in one sentence, without its traceback.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_bad_input import EXCEPTION_NAME
from tests.kernel.helpers import REPO_ROOT, runtime_processes

PRIVATE = 0o077
SAMPLES = {  # package in apps/ -> (scope, a call the agent may make, what its output says)
    "whiteboard": ("whiteboard", "board.create", {"title": "a house"}, '"title":"a house"'),
    "draw_and_guess": (
        "draw-and-guess",
        "game.start_round",
        {"mode": "user_guesses", "word": "cat"},
        "started; the runtime ends it at",
    ),
    "pomodoro": ("pomodoro", "pomodoro.status", {}, '"state":"idle"'),
}


class PrivateUser:
    """A work folder, a fresh data dir and the `lineup` commands, all under `umask 077`."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.work.mkdir()
        self.data_dir = root / "data"
        self.log = root / "runtime.log"
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in ("LINEUP_DATA_DIR", "PYTHONPATH")},
            "LINEUP_DATA_DIR": str(self.data_dir),
            "NO_COLOR": "1",
            "COLUMNS": "300",
        }
        self.runtime: subprocess.Popen[bytes] | None = None

    def run(self, *argv: str | Path, timeout: float = 120) -> tuple[int, str]:
        done = subprocess.run(
            [str(arg) for arg in argv],
            capture_output=True,
            cwd=self.work,
            env=self.env,
            timeout=timeout,
            check=False,
            umask=PRIVATE,
        )
        return done.returncode, (done.stdout + done.stderr).decode(errors="replace")

    def lineup(self, *args: str | Path, timeout: float = 120) -> tuple[int, str]:
        return self.run(sys.executable, "-m", "lineup.cli", *args, timeout=timeout)

    def ok(self, *args: str | Path) -> str:
        code, output = self.lineup(*args)
        assert code == 0, (args, output)
        assert "Traceback" not in output, (args, output)
        return output

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.runtime = subprocess.Popen(
                [sys.executable, "-m", "lineup.cli", "run", "--headless", "--no-web"],
                cwd=self.work,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                umask=PRIVATE,
            )
        deadline = time.monotonic() + 60
        while True:
            assert self.runtime.poll() is None, self.log.read_text()[-3000:]
            code, output = self.lineup("debug", "status", "--json")
            if code == 0 and json.loads(output)["state"] == "running":
                return
            assert time.monotonic() < deadline, f"the runtime did not start: {output}"
            time.sleep(0.2)

    def stop(self) -> list[int]:
        """Stops the runtime; the processes it left behind (none, if all is well)."""
        if self.runtime is None:
            return []
        self.runtime.send_signal(signal.SIGTERM)
        try:
            self.runtime.wait(30)
        finally:
            if self.runtime.poll() is None:
                self.runtime.kill()
                self.runtime.wait(10)
        return runtime_processes(self.runtime)

    def trust_new_key(self) -> Path:
        """`lineup app keygen`, and its public key copied into the trusted keys."""
        self.ok("app", "keygen", "--out", "keys", "--name", "me")
        trusted = self.data_dir / "trusted_keys"
        code, output = self.run("sh", "-c", f"mkdir -p {trusted} && cp keys/me.pub {trusted}/")
        assert code == 0, output
        return self.work / "keys" / "me.key"

    def install(self, source: Path, name: str, scope: str, key: Path) -> None:
        bundle = f"{name}.bundle"
        self.ok("app", "build", source, "--out", bundle)
        self.ok("app", "sign", bundle, "--key", key)
        self.ok("app", "install", bundle)
        self.ok("app", "enable", scope)

    def actor(self, name: str) -> dict[str, Any] | None:
        actors = json.loads(self.ok("debug", "actors", "--json"))
        return next((a for a in actors if a["name"] == name), None)

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        return self.ok(
            "agent", "call", "--conversation", "main", "--tool", tool,
            "--args", json.dumps(arguments), "--timeout", "60",
        )  # fmt: skip


@pytest.fixture
def user(tmp_path: Path) -> Iterator[PrivateUser]:
    the_user = PrivateUser(tmp_path)
    try:
        yield the_user
    finally:
        left = the_user.stop()
        assert not left, f"actor processes outlived their supervisor: {left}"


def cache_modes(data_dir: Path) -> dict[str, int]:
    """Every directory and file of every bundle cache entry, with its permission bits."""
    root = data_dir / "bundles"
    return {
        str(path.relative_to(root)): stat.S_IMODE(path.lstat().st_mode)
        for entry in root.iterdir()
        for path in [entry, *entry.rglob("*")]
    }


def test_the_sample_apps_install_launch_and_answer_under_umask_077(user: PrivateUser) -> None:
    user.start()
    key = user.trust_new_key()
    for package, (scope, *_) in SAMPLES.items():
        user.install(REPO_ROOT / "apps" / package, package, scope, key)
        output = user.ok("app", "launch", scope, "--conversation", "main")
        assert f"launch {scope}: succeeded" in output
        record = user.actor(f"app.{scope}")
        assert record is not None and record["state"] == "running", record
    # The code each app runs is readable by the app's own uid: the modes were set, not
    # left to the umask, and nothing else in the cache is writable.
    modes = cache_modes(user.data_dir)
    assert modes and set(modes.values()) == {0o555, 0o444}, modes
    user.ok("agent", "send", "--conversation", "main", "--text", "hi")
    for _, tool, arguments, said in SAMPLES.values():
        assert said in user.call(tool, arguments), tool


def test_a_cache_entry_whose_modes_a_umask_cut_is_restored_before_its_code_runs(
    user: PrivateUser,
) -> None:
    """An entry written by a runtime that left its files' modes to the umask (0400)."""
    user.start()
    user.install(REPO_ROOT / "apps" / "pomodoro", "pomodoro", "pomodoro", user.trust_new_key())
    (entry,) = (user.data_dir / "bundles").iterdir()
    for path in [entry, *entry.rglob("*")]:
        path.chmod(0o500 if path.is_dir() else 0o400)
    assert "launch pomodoro: succeeded" in user.ok(
        "app", "launch", "pomodoro", "--conversation", "main"
    )
    assert set(cache_modes(user.data_dir).values()) == {0o555, 0o444}


def test_a_new_apps_generated_test_passes_under_umask_077(user: PrivateUser) -> None:
    assert "created hello" in user.ok("app", "new", "hello")
    hello = user.work / "hello"
    assert stat.S_IMODE(hello.stat().st_mode) == 0o700  # the umask made it private
    # Its test builds, signs, installs and calls it in a runtime of its own, started
    # under the same umask.
    code, output = user.run(
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
        "hello/test_app.py", timeout=300,
    )  # fmt: skip
    assert code == 0, output
    assert "1 passed" in output, output


def test_an_app_that_does_not_start_is_said_so_in_one_sentence(user: PrivateUser) -> None:
    """Its code fails only where it runs (in its jail): the build passes, the start fails."""
    user.ok("app", "new", "broken-start")
    package = user.work / "broken_start"
    with open(package / "__init__.py", "a") as init:
        init.write("import os\nif os.environ.get('LINEUP_APP_CODE'):  # only in its jail\n")
        init.write("    import a_module_no_one_has\n")
    user.start()
    user.install(package, "broken", "broken-start", user.trust_new_key())
    code, output = user.lineup("app", "launch", "broken-start", "--conversation", "main")
    assert code != 0, output
    assert "Traceback" not in output and EXCEPTION_NAME.search(output) is None, output
    assert " | " not in output and "File " not in output, output
    assert len(output.strip().splitlines()) == 1, output
    assert output.strip().endswith(
        "launch broken-start refused: broken-start did not start: its code imports a"
        f" module it cannot find; the end of {user.data_dir}/logs/app.broken-start.log says"
        " why (`lineup debug actors` shows its last exit)."
    ), output
    # The detail is in the log the sentence names.
    log = (user.data_dir / "logs" / "app.broken-start.log").read_text()
    assert "No module named 'a_module_no_one_has'" in log
