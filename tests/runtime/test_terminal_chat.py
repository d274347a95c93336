"""The terminal chat: what it prints for a view, what a typed line becomes, and a session
through `lineup chat attach` against a real runtime (embedded AppServer and demo agent)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from rich.markdown import Markdown

from actors.store import read_lifecycle
from lineup.terminal_chat import parse_line, render_new
from tests.kernel.helpers import REPO_ROOT

from .helpers import wait_for
from .test_lineup_run import _start, _stop

CHOICE = {
    "kind": "choice",
    "prompt": "Which colour?",
    "options": [{"id": "red", "label": "Red"}, {"id": "green", "label": "Green"}],
    "interaction_id": "colour.1",
    "message_id": "M1",
}


def _view(**extra: Any) -> dict[str, Any]:
    return {"timeline": [], "tasks": {}, "pending_interactions": [], **extra}


def test_each_item_is_printed_once_and_again_when_its_state_changes() -> None:
    seen: dict[str, str] = {}
    item = {"id": "A", "sender": "user", "shown": "hi", "state": "pending"}
    assert render_new(_view(timeline=[item]), seen) == ["[you] hi  (pending)"]
    assert render_new(_view(timeline=[item]), seen) == []
    accepted = {**item, "state": "accepted"}
    assert render_new(_view(timeline=[accepted]), seen) == ["  ↳ hi … now accepted"]
    asked = render_new(_view(pending_interactions=[CHOICE]), seen)
    assert asked == ["  ? Which colour?", "     /1 Red", "     /2 Green"]
    assert render_new(_view(pending_interactions=[CHOICE]), seen) == []
    markdown = {
        "id": "B",
        "sender": "agent:demo",
        "text": "**hi** <b>x</b> [go](http://e)",
        "format": "markdown",
        "state": "received",
    }
    header, body = render_new(_view(timeline=[markdown]), seen)
    assert header == "[agent:demo]  (received)"
    assert isinstance(body, Markdown)
    assert body.markup == "**hi** &lt;b&gt;x&lt;/b&gt; go (http://e)"
    assert body.hyperlinks is False


def test_typed_lines_become_declarative_inputs_or_say_why_not() -> None:
    view = _view(pending_interactions=[CHOICE])
    assert parse_line("hello", view, "c") == {
        "kind": "send",
        "conversation_id": "c",
        "text": "hello",
    }
    assert parse_line("/2", view, "c") == {
        "kind": "answer",
        "conversation_id": "c",
        "interaction_id": "colour.1",
        "selected": ["green"],
    }
    assert parse_line("/3", view, "c") == "pick 1 to 2"
    assert parse_line("/yes", view, "c") == "no confirm is waiting for an answer"
    assert parse_line("/frobnicate", view, "c") == "unknown command /frobnicate"
    assert parse_line("   ", view, "c") == "nothing to send"


def _attach(data_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lineup.cli",
            "chat",
            "attach",
            "--data-dir",
            str(data_dir),
            "--conversation",
            "term",
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


async def test_a_session_in_lineup_chat_attach(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    runtime = _start(data_dir, tmp_path / "run.log")
    chat = None
    try:

        def online() -> bool:
            assert runtime.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            record = read_lifecycle(data_dir) if (data_dir / "runtime.db").exists() else None
            return record is not None and record["state"] == "online"

        await wait_for(online, 30, "the runtime to be online")
        chat = _attach(data_dir)
        screen: list[str] = []
        reader = threading.Thread(target=lambda: screen.extend(chat.stdout or []), daemon=True)
        reader.start()
        assert chat.stdin is not None
        chat.stdin.write("hello from the terminal\n")
        chat.stdin.flush()
        await wait_for(lambda: any("/2 Green" in line for line in screen), 30, "the choice")
        assert any(line.startswith("[you] hello from the terminal") for line in screen)
        chat.stdin.write("/2\n")
        chat.stdin.flush()
        await wait_for(lambda: any("/yes or /no" in line for line in screen), 30, "the confirm")
        chat.stdin.write("/quit\n")
        chat.stdin.flush()
        assert chat.wait(10) == 0
        reader.join(5)
        assert sum("[you] hello from the terminal" in line for line in screen) == 1
    finally:
        if chat is not None:
            if chat.poll() is None:
                chat.kill()
            chat.wait()
            for pipe in (chat.stdin, chat.stdout):
                if pipe is not None:
                    pipe.close()
        _stop(runtime)
