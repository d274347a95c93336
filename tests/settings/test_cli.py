"""`lineup settings` as a person meets it without a runtime: help on every command, and
bad input (no runtime, a file that is not a policy, an unknown command) answered with one
sentence and a non-zero exit, never a traceback or an exception's name."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kernel.helpers import REPO_ROOT

COMMANDS = ("show", "grants", "revoke", "policy", "default", "mode", "data")
EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception|ExceptionGroup|Interrupt)\b")


def _settings(data_dir: Path, *args: str | Path) -> tuple[int, str, str]:
    env = {**os.environ, "LINEUP_DATA_DIR": str(data_dir), "NO_COLOR": "1", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "lineup.cli", "settings", *map(str, args)],
        capture_output=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _one_sentence(output: str) -> str:
    assert "Traceback" not in output and EXCEPTION_NAME.search(output) is None, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    return lines[0]


def test_every_command_has_help(tmp_path: Path) -> None:
    code, out, _ = _settings(tmp_path, "--help")
    assert code == 0
    for command in COMMANDS:
        assert re.search(rf"^\s+{command}\s+\S", out, re.MULTILINE), (command, out)
    assert "control socket" in out  # says how it reaches the runtime
    for command in COMMANDS:
        code, out, _ = _settings(tmp_path, command, "--help")
        assert code == 0 and "--data-dir" in out and "--json" in out, (command, out)
    code, out, _ = _settings(tmp_path, "policy", "--help")
    assert "--set FILE" in out and "refused and nothing changes" in " ".join(out.split())


@pytest.mark.parametrize("command", [("show",), ("grants",), ("policy",), ("data",)])
def test_no_runtime_is_one_sentence(tmp_path: Path, command: tuple[str, ...]) -> None:
    code, out, err = _settings(tmp_path, *command)
    assert code == 2 and out == "", (out, err)
    assert _one_sentence(err) == (
        f"error: no runtime is running on {tmp_path}; start one with `lineup run`, or point"
        " at another data dir with --data-dir DIR or $LINEUP_DATA_DIR"
    )
    code, _, err = _settings(tmp_path, *command, "--json")
    assert code == 2 and "no runtime is running" in _one_sentence(err)


def test_bad_input_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "not.json").write_text("deny everything")
    (tmp_path / "list.json").write_text('["pomodoro/*"]')
    for args, expected in (
        (("policy", "--set", tmp_path / "absent.json"), "cannot read"),
        (("policy", "--set", tmp_path / "not.json"), "is not JSON (line 1, column 1"),
        (("policy", "--set", tmp_path / "list.json"), "must hold a JSON object"),
        (("shw",), "unknown command 'shw'; did you mean 'show'?"),
    ):
        code, out, err = _settings(tmp_path, *args)
        assert code == 2, (args, out, err)
        assert expected in err, (args, err)
        assert "Traceback" not in err and EXCEPTION_NAME.search(err) is None, err
    code, _, err = _settings(tmp_path, "revoke", "pomodoro")
    assert code == 2 and "the following arguments are required: CAPABILITY" in err, err
    assert not (tmp_path / "tool_policy.json").exists()
