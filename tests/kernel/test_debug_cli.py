"""`lineup debug ...` as an operator meets it: outcomes of `send`, human errors for unknown
names, tables without colour when piped, long bodies below the table, empty mailboxes said
in words, the lifecycle in `trace`, and the stopped runtime's saved state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from lineup.debug_cmd import duration

from .conftest import MakeRuntime
from .helpers import REPO_ROOT, Runtime, child


def debug(rt: Runtime, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = subprocess.run(
        [sys.executable, "-m", "lineup.cli", "debug", *args, "--data-dir", str(rt.data_dir)],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
    )
    assert "Traceback" not in result.stderr and "Error:" not in result.stderr, result.stderr
    return result.returncode, result.stdout, result.stderr


def test_send_prints_the_outcome(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": [child("echo", "Echo")]}).start()
    rt.wait_actor("echo")
    code, out, _ = debug(rt, "send", "echo", "echo", "--body", '{"x": 1}')
    assert code == 0 and "echo handled it" in out and '{"x": 1}' in out
    code, out, _ = debug(rt, "send", "echo", "no.such.type")
    assert code == 1 and "unknown_type" in out
    code, out, _ = debug(rt, "send", "echo", "echo", "--body", '"refuse"', "--json")
    answer = json.loads(out)
    assert code == 1 and answer["outcome"] == "refused" and answer["code"] == "permission_denied"


def test_unknown_names_get_a_did_you_mean(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": [child("echo", "Echo")]}).start()
    rt.wait_actor("echo")
    for command in ("kill", "mailbox", "send"):
        code, _, err = debug(rt, command, "ecko", *(["tick"] if command == "send" else []))
        assert code != 0
        assert "did you mean echo?" in err and "KeyError" not in err, err
    rt.send("echo", "tick")  # a stopped runtime knows the actors its mailbox file names
    rt.wait_drained("echo", 10)
    rt.stop()
    code, _, err = debug(rt, "mailbox", "ecko")
    assert code != 0 and "did you mean echo?" in err


def test_tables_read_as_text(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": [child("echo", "Echo")]}).start()
    rt.wait_actor("echo")
    code, out, _ = debug(rt, "mailbox", "echo")
    assert code == 0 and "nothing waiting" in out
    code, out, _ = debug(rt, "actors")
    assert "\x1b[" not in out  # piped: no colour codes
    assert "running" in out and "oldest in flight" in out
    pid = rt.pid_of("echo")
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # what is sent now stays in flight, with its long body
    try:
        long_body = "x" * 300
        debug(rt, "send", "echo", "echo", "--body", json.dumps(long_body), "--wait", "0")
        code, out, _ = debug(rt, "mailbox", "echo", "--body")
        table, _, below = out.partition("(below)")
        assert long_body not in table and long_body in below
    finally:
        os.kill(pid, signal.SIGCONT)


def test_trace_shows_the_lifecycle(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": [child("echo", "Echo")]}).start()
    pid = rt.wait_actor("echo")["pid"]
    rt.control({"type": "kill", "name": "echo"})
    rt.wait_actor("echo", restarts=1)
    lines = []
    with subprocess.Popen(
        [sys.executable, "-m", "lineup.cli", "debug", "trace", "--data-dir", str(rt.data_dir)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "restart" in line:
                break
        process.terminate()
    text = "".join(lines)
    assert "exit" in text and "killed by SIGKILL" in text and f"pid {pid}" in text


def test_what_actors_say_is_shown_not_obeyed(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": [child("echo", "Echo")]}).start()
    rt.wait_actor("echo")
    hostile = "\x1b[31mred\x1b]8;;http://x\x07click\u202eevil[bold]b[/bold]"
    code, out, _ = debug(rt, "send", "echo", "echo", "--body", json.dumps(hostile))
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\u001b[31mred" in out or "\\x1b[31mred" in out
    assert "[bold]b[/bold]" in out


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.25, "250 ms"), (3.21, "3.2 s"), (42, "42 s"), (185, "3 m 05 s"), (7300, "2 h 01 m")],
)
def test_durations_read_as_durations(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_a_stopped_runtime_shows_saved_state(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"children": [child("echo", "Echo")]}).start()
    rt.wait_actor("echo")
    rt.send("echo", "tick")
    rt.wait_drained("echo", 10)
    rt.stop()
    code, out, _ = debug(rt, "actors")
    assert code == 0 and "saved state" in out and "echo" in out
