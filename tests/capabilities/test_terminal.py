"""The terminal chat's part: an app's notification is shown once, as text, with the bell;
`/dismiss` closes a consent card (a question the runtime asked) without deciding, and
answers nothing else; and a user answering the cards in `lineup chat attach`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from actors.capability_gateway._notifications import (
    KEEP,
    NOTIFICATIONS_FILE,
    write_for_terminal,
)
from lineup._capability_lines import notification_lines
from lineup.terminal_chat import parse_line
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .helpers import ask, keeper_ready, outcome

NOTE = {"title": "Tea", "text": "ready"}

CARD: dict[str, Any] = {
    "interaction_id": "keeper/r1",
    "kind": "choice",
    "prompt": "keeper asks to use file.save: to keep your notes",
    "options": [{"id": "once", "label": "Allow once"}, {"id": "deny", "label": "Deny"}],
    "origin": "runtime",
    "message_id": "keeper/r1",
}
QUESTION: dict[str, Any] = {
    "interaction_id": "i-1",
    "kind": "confirm",
    "prompt": "go?",
    "message_id": "m-1",
}


def _view(*waiting: dict[str, Any]) -> dict[str, Any]:
    timeline = [{"id": w["message_id"], "kind": "interaction", "interaction": w} for w in waiting]
    return {"timeline": timeline, "pending_interactions": list(waiting)}


def test_dismiss_closes_only_a_consent_card() -> None:
    assert parse_line("/dismiss", _view(CARD), "main") == {
        "kind": "dismiss",
        "conversation_id": "main",
        "interaction_id": "keeper/r1",
    }
    assert parse_line("/dismiss", _view(QUESTION), "main") == (
        "no permission request is waiting for an answer"
    )
    other = {**CARD, "interaction_id": "keeper/r2", "message_id": "keeper/r2"}
    several = parse_line("/dismiss", _view(CARD, other), "main")
    assert isinstance(several, str) and several.startswith("2 permission requests are open")
    assert parse_line("/dismiss q2", _view(CARD, other), "main") == {
        "kind": "dismiss",
        "conversation_id": "main",
        "interaction_id": "keeper/r2",
    }
    # Answered like any question: /1 is "Allow once".
    assert parse_line("/1", _view(CARD), "main") == {
        "kind": "answer",
        "conversation_id": "main",
        "interaction_id": "keeper/r1",
        "selected": ["once"],
    }


def test_each_notification_is_shown_once_as_text_and_the_file_keeps_the_newest(
    tmp_path: Path,
) -> None:
    first = {"app_scope": "keeper", "app": "Keeper", "title": "Tea", "text": "ready \x1b[31mnow"}
    write_for_terminal(tmp_path, first)
    lines, last = notification_lines(tmp_path, 0)
    assert [line.plain for line in lines] == ["  ! Keeper: Tea — ready \\x1b[31mnow"]
    assert notification_lines(tmp_path, last) == ([], last)  # shown once
    # Past KEEP the oldest go; the numbers go on, so a reader misses none of the new ones.
    for n in range(KEEP + 5):
        write_for_terminal(tmp_path, {"app_scope": "keeper", "app": "Keeper", "text": f"n{n}"})
    kept = (tmp_path / NOTIFICATIONS_FILE).read_text().splitlines()
    assert len(kept) == KEEP and json.loads(kept[0])["text"] == "n5"
    lines, newest = notification_lines(tmp_path, last + KEEP)
    assert [line.plain for line in lines] == [f"  ! Keeper: n{n}" for n in range(KEEP, KEEP + 5)]
    assert newest == KEEP + 6
    # A file begun anew (removed by the user) is read from its start.
    (tmp_path / NOTIFICATIONS_FILE).unlink()
    write_for_terminal(tmp_path, {"app_scope": "keeper", "app": "Keeper", "text": "anew"})
    assert [line.plain for line in notification_lines(tmp_path, newest)[0]] == ["  ! Keeper: anew"]


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
            CONVERSATION,
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


async def test_the_user_answers_in_lineup_chat_attach(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, keeper)
    chat = _attach(stack.data_dir)
    screen: list[str] = []
    reader = threading.Thread(target=lambda: screen.extend(chat.stdout or []), daemon=True)
    reader.start()
    assert chat.stdin is not None
    try:
        await wait_for(lambda: any("type a message" in line for line in screen), 30, "the chat")
        await ask(agent, "t-1", "notification.show", NOTE, purpose="to say the tea is ready")
        await wait_for(lambda: any("/4 Deny" in line for line in screen), 30, "the card")
        asked = "keeper asks to use notification.show: to say the tea is ready"
        assert any(asked in line for line in screen), screen
        chat.stdin.write("/3\n")  # Always allow
        chat.stdin.flush()
        assert (await outcome(stack, "t-1"))["status"] == "completed"
        await wait_for(
            lambda: any(line.startswith("  ! Keeper: Tea — ready") for line in screen),
            30,
            "the notification",
        )
        await ask(agent, "t-2", "file.save", {"name": "a", "data_base64": ""}, front=True)
        await wait_for(
            lambda: any("keeper asks to use file.save" in line for line in screen), 30, "a card"
        )
        chat.stdin.write("/dismiss\n")
        chat.stdin.flush()
        assert (await outcome(stack, "t-2"))["status"] == "cancelled_by_user"
        chat.stdin.write("/quit\n")
        chat.stdin.flush()
        assert chat.wait(10) == 0
    finally:
        if chat.poll() is None:
            chat.kill()
        chat.wait()
        reader.join(5)
        for pipe in (chat.stdin, chat.stdout):
            if pipe is not None:
                pipe.close()
    assert sum(line.startswith("  ! Keeper:") for line in screen) == 1  # shown once
