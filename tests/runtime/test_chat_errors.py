"""The chat commands with bad input or no runtime: one sentence saying what to do, a
non-zero exit, no traceback and no exception's class name; an empty conversation or a
stopped runtime is said in words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from apps.chat import app_dir
from apps.sdk import EventLog
from tests.kernel.helpers import REPO_ROOT


def _lineup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineup.cli", *args],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _chat_log(data_dir: Path, *conversations: str) -> None:
    """A chat app log with one message of the user's in each of `conversations`."""
    log = EventLog(app_dir(data_dir))
    try:
        for n, conversation in enumerate(conversations):
            action = {"id": f"A{n}", "action": "send_text", "conversation_id": conversation}
            log.add_action(f"K{n}", {**action, "text": f"hello {n}"})
    finally:
        log.close()


def _assert_human(done: subprocess.CompletedProcess[str], *expected: str) -> None:
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output
    for name in ("Error:", "Exception", "KeyError", "ControlError", "OSError"):
        assert name not in output, output
    assert output.count("\n") == 1, output  # one sentence
    for text in expected:
        assert text in " ".join(output.split()), output


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (("chat", "send", "--text", "hi"), ("No runtime is answering in", "`lineup run`")),
        (("chat", "attach"), ("No runtime is answering in", "--data-dir")),
        (("chat", "send", "--text", "   "), ("Nothing to send", "--text")),
    ],
)
def test_no_runtime_and_empty_messages(
    tmp_path: Path, command: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    _assert_human(_lineup(*command, "--data-dir", str(tmp_path)), *expected)


def test_history_of_a_missing_data_dir_names_it() -> None:
    missing = "/nonexistent/lineup-data"
    done = _lineup("chat", "history", "--data-dir", missing)
    _assert_human(done, f"There is no data dir {missing}", "--data-dir")


def test_history_of_an_unknown_conversation_lists_the_known_ones(tmp_path: Path) -> None:
    _chat_log(tmp_path, "main", "work")
    done = _lineup("chat", "history", "--data-dir", str(tmp_path), "--conversation", "wrok")
    _assert_human(done, "No conversation 'wrok'", "did you mean 'work'?", "'main', 'work'")
    shown = _lineup("chat", "history", "--data-dir", str(tmp_path), "--conversation", "work")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("saved state: the runtime is not running\n")
    assert "hello 1" in shown.stdout and "hello 0" not in shown.stdout


def test_an_empty_conversation_says_nothing_yet(tmp_path: Path) -> None:
    done = _lineup("chat", "history", "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "saved state: the runtime is not running\nchat main: nothing yet\n"
    as_json = _lineup("chat", "history", "--data-dir", str(tmp_path), "--json")
    assert as_json.returncode == 0 and '"timeline": []' in as_json.stdout
