"""`lineup run` on its own: the embedded AppServer and demo agent on loopback, the runtime
online, the demo agent's greeting in `lineup chat history`, and a fresh and a reused data
dir both coming up to `online` in `lineup debug status`: the first keeps its AppServer token
in the data dir's file, the second, in a desktop session, in its keyring."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.kernel.helpers import REPO_ROOT, runtime_processes

from .helpers import wait_for
from .keyring import session_keyring


def _lineup(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineup.cli", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _status(data_dir: Path, env: dict[str, str] | None = None) -> dict[str, Any] | None:
    done = _lineup("debug", "status", "--json", "--data-dir", str(data_dir), env=env)
    return json.loads(done.stdout) if done.returncode == 0 else None


def _start(
    data_dir: Path, log: Path, session: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`lineup run --headless` in the session's environment (the tests' own by default)."""
    env = {**(os.environ if session is None else session), "PYTHONPATH": str(REPO_ROOT)}
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "lineup.cli", "run", "--headless", "--data-dir", str(data_dir)],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    assert not runtime_processes(process)


async def _one_run(data_dir: Path, log: Path, run: int, session: dict[str, str]) -> str:
    """The run's token holder, as `lineup debug status` says in its session."""
    process = _start(data_dir, log, session)
    try:

        def online() -> dict[str, Any] | None:
            assert process.poll() is None, log.read_text()[-3000:]
            status = _status(data_dir, session)
            return status if status is not None and status["lifecycle"] == "online" else None

        status = await wait_for(online, 30, f"run {run} to be online")
        sent = _lineup(
            "agent", "send", "--data-dir", str(data_dir),
            "--conversation", "conv-run", "--text", f"hello {run}",
        )  # fmt: skip
        assert sent.returncode == 0, sent.stderr

        def shown() -> list[Any]:
            done = _lineup(
                "chat", "history", "--json", "--data-dir", str(data_dir),
                "--conversation", "conv-run",
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            return [i["text"] for i in json.loads(done.stdout)["timeline"]]

        expected = [f"hello {n}" for n in range(run + 1)]
        await wait_for(lambda: shown() == expected, 30, "the agent's message in the history")
        return str(status["token"]["holder"])
    finally:
        _stop(process)


async def test_lineup_run_comes_online_with_its_own_appserver(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # A fresh data dir, with no session bus: the token in the data dir's 0600 file.
    assert await _one_run(data_dir, tmp_path / "run.log", 0, dict(os.environ)) == "file"
    assert (_status(data_dir) or {}).get("lifecycle") == "stopped"
    token = data_dir / ".runtime_token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    # The same one again in a desktop session: the token in its keyring, and not in a file.
    with session_keyring(tmp_path / "session") as session:
        assert await _one_run(data_dir, tmp_path / "run.log", 1, session) == "keyring"
        assert not token.exists()
        assert (_status(data_dir, session) or {}).get("lifecycle") == "stopped"
