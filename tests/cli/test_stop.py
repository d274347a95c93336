"""`lineup stop`: a runtime started in the background (or with its terminal chat) stops as
Ctrl-C stops it, and the command returns only once its process has ended; with none
running it says so."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel.helpers import REPO_ROOT, runtime_processes
from tests.runtime.test_lineup_run import _lineup, _start, _status, _stop


def _wait_online(process: subprocess.Popen[bytes], data_dir: Path, log: Path) -> None:
    deadline = time.monotonic() + 60
    while (_status(data_dir) or {}).get("state") != "running":
        assert process.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "the runtime did not start"
        time.sleep(0.1)


@pytest.fixture
def headless(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path]]:
    """`lineup run --headless` on a data dir of its own, up: (its process, the data dir,
    its log); stopped at the end if the test left it running."""
    data_dir, log = tmp_path / "data", tmp_path / "run.log"
    process = _start(data_dir, log)
    try:
        _wait_online(process, data_dir, log)
        yield process, data_dir, log
    finally:
        if process.poll() is None:
            _stop(process)


def test_lineup_stop_stops_a_headless_runtime_and_returns_once_it_has_ended(
    headless: tuple[subprocess.Popen[bytes], Path, Path],
) -> None:
    process, data_dir, log = headless
    second = _lineup("run", "--headless", "--data-dir", str(data_dir))
    assert second.returncode != 0
    assert f"stop it with `lineup stop --data-dir {data_dir}`" in second.stderr, second.stderr

    done = _lineup("stop", "--data-dir", str(data_dir), "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["stopped"] is True
    assert record["pid"] == process.pid
    assert record["asked_by"] == "control socket"
    # It returned once the process had ended: nothing is left to wait for but the kernel's
    # word to its parent, which follows the last thread's end at once.
    assert process.wait(timeout=1) == 0, log.read_text()[-3000:]
    assert not runtime_processes(process)
    assert "stopped" in log.read_text()

    again = _lineup("stop", "--data-dir", str(data_dir))
    assert again.returncode == 0
    assert again.stdout.strip() == f"no runtime is running on {data_dir}; nothing to stop"


def test_without_the_demo_agent_a_message_sent_as_the_agent_is_not_the_demos(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    log = tmp_path / "run.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lineup.cli", "run", "--headless", "--no-web",
             "--no-demo-agent", "--data-dir", str(data_dir)],
            cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            stdout=out, stderr=out, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        _wait_online(process, data_dir, log)
        where = ("--data-dir", str(data_dir), "--conversation", "solo")
        sent = _lineup("agent", "send", *where, "--text", "hello from the shell")
        assert sent.returncode == 0, sent.stderr
        deadline = time.monotonic() + 30
        while True:
            shown = json.loads(_lineup("chat", "history", *where, "--json").stdout)
            said = [i for i in shown["timeline"] if i["text"] == "hello from the shell"]
            if said or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert [i["sender"] for i in said] == ["agent:agent"]
    finally:
        _stop(process)


def test_lineup_stop_ends_the_terminal_chat_that_started_the_runtime(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    log = tmp_path / "chat.log"
    primary, secondary = pty.openpty()  # the chat runs only on a terminal
    with open(log, "wb") as out:
        chat = subprocess.Popen(
            [sys.executable, "-m", "lineup.cli", "run", "--no-web", "--data-dir", str(data_dir)],
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "NO_COLOR": "1"},
            stdin=secondary,
            stdout=out,
            stderr=out,
        )
    os.close(secondary)
    try:
        _wait_online(chat, data_dir, log)
        deadline = time.monotonic() + 30
        while "/quit stops the runtime" not in log.read_text():
            assert chat.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
        done = _lineup("stop", "--data-dir", str(data_dir))
        assert done.returncode == 0, done.stderr
        assert "stopped the runtime on" in done.stdout
        # The chat was waiting for a line; it ends with its runtime, not at the next one.
        assert chat.wait(timeout=20) == 0
        assert "the runtime stopped (exit status 0)" in log.read_text()
        assert "Traceback" not in log.read_text()
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait(10)
        os.close(primary)


def test_a_runtime_that_does_not_answer_is_sent_sigterm_and_a_stop_that_takes_too_long_says_so(
    headless: tuple[subprocess.Popen[bytes], Path, Path],
) -> None:
    process, data_dir, _ = headless
    os.kill(process.pid, signal.SIGSTOP)  # it holds its lock, and answers nothing
    try:
        late = _lineup("stop", "--data-dir", str(data_dir), "--timeout", "1")
    finally:
        os.kill(process.pid, signal.SIGCONT)  # the SIGTERM it was sent now stops it
    assert late.returncode == 2
    said = " ".join(late.stderr.split())
    assert f"(pid {process.pid}) did not stop within 1 s" in said, said
    assert f"kill -9 {process.pid}" in said
    assert "Traceback" not in late.stderr
    assert process.wait(timeout=30) == 0
    assert not runtime_processes(process)
