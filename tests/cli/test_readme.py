"""The README's commands, exactly as written, as a new user runs them: each in a fresh shell
under `umask 077`, on a fresh home folder, with nothing on the PATH but what the README's
activation line puts there. The runtime runs on the default data dir and every other
command finds it there without `--data-dir`.

The commands are read from the README's shell blocks (all but the set-up block at its top);
the interactive or endless ones (`chat attach`, `debug trace`) and the line listing the other
app commands are left out; `lineup run --headless` runs in the background for the rest, and
`lineup stop` stops it last. A line that sources a file (the venv's activation) is run
before every command after it, as a shell kept open would have it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.store import read_lifecycle

REPO = Path(__file__).resolve().parents[2]
SKIPPED = ("lineup chat attach", "lineup debug trace", "lineup app update|")
# What each command must print (a fragment of its output, spaces normalised).
EXPECTED = {
    "lineup chat history --conversation main": "chat main",
    "lineup agent send --conversation main --text hi": "",
    "lineup agent inventory --conversation main": "main",
    "lineup tools inventory": "main: revision",
    "lineup agent call --conversation main --tool pomodoro.start --args '{\"minutes\": 25}'": (
        "started; the runtime ends it at"
    ),
    "lineup tools calls --state failed": "no tool calls (state failed)",
    "lineup agent history --conversation main": "lineup.tool.accepted",
    "lineup agent mcp --print-config": '"mcpServers"',
    "lineup app keygen --out keys --name me": "me.pub",
    "test -f keys/me.key || lineup app keygen --out keys --name me": "",
    (
        "mkdir -p ~/.local/share/lineup/trusted_keys"
        " && cp keys/me.pub ~/.local/share/lineup/trusted_keys/"
    ): "",
    (
        "for app in whiteboard draw_and_guess pomodoro voice; do lineup app build apps/$app --out"
        " $app.bundle && lineup app sign $app.bundle --key keys/me.key && lineup app install"
        " $app.bundle; lineup app enable ${app//_/-}; done"
    ): "install draw-and-guess: succeeded",
    "lineup app build apps/pomodoro --out pomodoro.bundle": "pomodoro",
    "lineup app sign pomodoro.bundle --key keys/me.key": "",
    "lineup app install pomodoro.bundle": "install pomodoro: succeeded",
    "lineup app enable pomodoro": "enable pomodoro: succeeded",
    "lineup app launch pomodoro --conversation main": "launch pomodoro: succeeded",
    "lineup app list": "pomodoro",
    "lineup settings show": "each app's data",
    "lineup app new hello": "created hello",
    "lineup app data": "session data",
    "lineup artifacts list": "no artifacts",
    "lineup capabilities list": "no grants",
    "lineup debug actors --stats": "app.pomodoro",
    "lineup debug status": "",
    "lineup debug actors": "router",
    "lineup debug mailbox store --body": "",
    "lineup debug dead": "",
    "lineup debug kill router": "",
    "lineup open": "opened the runtime's window in your browser",
    "lineup web url": "http://127.0.0.1:",
    "lineup web url --json": '"url": "http://127.0.0.1:',
    "lineup stop": "stopped the runtime on",
}


def _online(data_dir: Path) -> bool:
    record = read_lifecycle(data_dir) if (data_dir / "runtime.db").exists() else None
    return record is not None and record["state"] == "online"


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    commands = []
    for block in blocks[1:]:
        for line in block.replace("\\\n", " ").splitlines():
            command = " ".join(re.sub(r"\s+#\s.*$", "", line).split())
            if command and not command.startswith(SKIPPED):
                commands.append(command)
    return commands


@pytest.fixture
def home(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh home folder (the default data dir in it) and a work folder laid out as the
    repository's: its `apps/`, and the venv the README's set-up made as `.venv`. The
    environment is the test's, less the venv on the PATH and any data dir setting."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "apps").symlink_to(REPO / "apps")
    (work / ".venv").symlink_to(Path(sys.prefix))
    venv_bin = str(Path(sys.prefix) / "bin")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("LINEUP_DATA_DIR", "XDG_DATA_HOME", "VIRTUAL_ENV", "PYTHONPATH")
    }
    # The desktop's browser, as $BROWSER names it: it keeps the address it was given.
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {tmp_path / "opened.txt"}\n')
    browser.chmod(0o755)
    env.update(
        BROWSER=str(browser),
        HOME=str(tmp_path / "home"),
        PATH=os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin),
        NO_COLOR="1",
        COLUMNS="200",
    )
    yield work, env


def _in_a_new_shell(command: str, sourced: list[str]) -> list[str]:
    """`command` as a user types it in a fresh shell: umask 077, what was sourced before."""
    return ["bash", "-c", "; ".join(["umask 077", *sourced, command])]


def test_the_readme_commands_work_as_written(home: tuple[Path, dict[str, str]]) -> None:
    work, env = home
    commands = readme_commands()
    assert "lineup run --headless" in commands
    assert "lineup stop" in commands
    sourced = [c for c in commands if c.startswith((". ", "source "))]
    assert sourced == [". .venv/bin/activate"]
    assert commands.index(sourced[0]) < commands.index("lineup run --headless")
    assert subprocess.run(["bash", "-c", "command -v lineup"], env=env, check=False).returncode
    data_dir = Path(env["HOME"]) / ".local" / "share" / "lineup"
    log = work.parent / "run.log"
    with open(log, "wb") as out:
        runtime = subprocess.Popen(
            _in_a_new_shell("exec lineup run --headless", sourced),
            cwd=work,
            env=env,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 60
        while not (
            (data_dir / "appserver" / "credentials.json").exists() and _online(data_dir)
        ):  # the actors up and the runtime connected to its AppServer
            assert runtime.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the runtime did not come online"
            time.sleep(0.1)
        for command in [c for c in commands if c != "lineup stop"] + ["lineup stop"]:
            if command == "lineup run --headless" or command in sourced:
                continue
            done = subprocess.run(
                _in_a_new_shell(command, sourced),
                cwd=work,
                env=env,
                capture_output=True,
                timeout=120,
                check=False,
            )
            output = (done.stdout + done.stderr).decode(errors="replace")
            assert "Traceback" not in output, (command, output)
            assert done.returncode == 0, (command, output)
            assert EXPECTED.get(command, "") in " ".join(output.split()), (command, output)
        # `lineup stop` returned once the runtime had stopped, as Ctrl-C stops it; the
        # shell that ran it ends right after it.
        assert runtime.wait(timeout=10) == 0, log.read_text()[-3000:]
    finally:
        runtime.terminate()
        runtime.wait(timeout=30)
