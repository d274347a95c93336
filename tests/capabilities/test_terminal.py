"""The terminal chat's part: an app's notification is shown once, as text, with the bell;
`/dismiss` closes a consent card (a question the runtime asked) without deciding, and
answers nothing else; `/attach PATH` sends the file an app asks for, or says in one
sentence what is wrong with the path; and a user answering the cards in `lineup chat
attach`, attaching a file the app then reads back as its own, and saving files into the
downloads folder the environment names, the second of a name numbered."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from actors.capability_gateway._files import user_downloads
from actors.capability_gateway._notifications import (
    KEEP,
    NOTIFICATIONS_FILE,
    write_for_terminal,
)
from lineup._capability_lines import Attach, Chosen, notification_lines, read_attachment
from lineup.terminal_chat import parse_line
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import Agent

from .helpers import ask, audit_details, keeper_ready, outcome

NOTE = {"title": "Tea", "text": "ready"}

CARD: dict[str, Any] = {
    "interaction_id": "keeper/r1",
    "kind": "choice",
    "prompt": "keeper asks to save a file on your computer: to keep your notes",
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


FILE_CARD: dict[str, Any] = {
    **CARD,
    "prompt": "keeper asks you for a file: to read your list",
    "options": [{"id": "deny", "label": "Deny"}],
    "chooser": {"accept": ["text/plain", ".md"], "max_bytes": 100},
}


def test_attach_names_a_file_and_says_what_is_wrong_with_a_path(tmp_path: Path) -> None:
    assert parse_line("/attach", _view(CARD), "main") == "no app is asking for a file"
    assert parse_line("/attach", _view(FILE_CARD), "main") == (
        "type the file's path after /attach, e.g. /attach ~/Documents/notes.txt"
    )
    assert parse_line("/attach ~/My Notes.md", _view(FILE_CARD), "main") == Attach(
        FILE_CARD, "~/My Notes.md"
    )
    other = {**FILE_CARD, "interaction_id": "keeper/r2", "message_id": "keeper/r2"}
    several = parse_line("/attach a.txt", _view(FILE_CARD, other), "main")
    assert isinstance(several, str) and several.startswith("2 apps ask for a file")
    assert parse_line("/attach q2 a.txt", _view(FILE_CARD, other), "main") == Attach(other, "a.txt")

    (tmp_path / "list.txt").write_bytes(b"milk\n")
    (tmp_path / "big.txt").write_bytes(b"x" * 101)
    (tmp_path / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n....")
    os.mkfifo(tmp_path / "pipe")
    said = {
        typed: read_attachment(Attach(FILE_CARD, f"{tmp_path}/{typed}"))
        for typed in ("", "missing.txt", "pipe", "big.txt", "pic.png", "list.txt")
    }
    assert said[""] == f"{tmp_path}/ is a folder: give the path of a file in it"
    assert said["missing.txt"] == (
        f"there is no file at {tmp_path}/missing.txt: check the path (~ is your home folder)"
    )
    assert said["pipe"] == f"{tmp_path}/pipe is not a regular file: give the path of a file"
    assert said["big.txt"] == (
        "“big.txt” is 101 bytes; this app takes files up to 100 bytes: choose a smaller one."
    )
    assert said["pic.png"] == (
        "“pic.png” is a PNG picture; this app takes plain text or .md files: choose another file."
    )
    # Bytes and a name, never the path: the runtime tells the type from the bytes again.
    assert said["list.txt"] == Chosen("keeper/r1", "list.txt", b"milk\n", "text/plain")
    assert said["list.txt"].body() == {
        "request_id": "keeper/r1",
        "name": "list.txt",
        "media_type": "",
        "data": b"milk\n",
    }


def test_the_downloads_folder_is_the_one_the_desktop_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert user_downloads({"HOME": str(home)}).path == home / "Downloads"
    dirs = home / ".config" / "user-dirs.dirs"
    dirs.parent.mkdir(parents=True)
    dirs.write_text('# written by xdg-user-dirs-update\nXDG_DOWNLOAD_DIR="$HOME/Téléchargements"\n')
    assert user_downloads({"HOME": str(home)}).path == home / "Téléchargements"
    named = {"HOME": str(home), "XDG_DOWNLOAD_DIR": str(tmp_path / "dl")}
    assert user_downloads(named) == user_downloads(named)  # the same, and the user's
    assert user_downloads(named).path == tmp_path / "dl" and not user_downloads(named).own
    dirs.write_text('XDG_DOWNLOAD_DIR="$HOME/"\n')  # the home itself is no downloads folder
    assert user_downloads({"HOME": str(home)}).path == home / "Downloads"


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


def _attach(data_dir: Path, home: Path) -> subprocess.Popen[str]:
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
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200", "HOME": str(home)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


class _Chat:
    """`lineup chat attach` as the user runs it: what it printed, and lines typed into it."""

    def __init__(self, data_dir: Path, home: Path) -> None:
        self.process = _attach(data_dir, home)
        self.screen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        self.screen.extend(self.process.stdout or [])

    def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def count(self, text: str) -> int:
        return sum(text in line for line in self.screen)

    async def shows(self, text: str) -> None:
        await wait_for(lambda: self.count(text) > 0, 30, f"{text!r} on the screen")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.reader.join(5)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


async def test_the_user_answers_in_lineup_chat_attach(
    stack: Stack, keeper: tuple[Path, Path], tmp_path: Path
) -> None:
    downloads = tmp_path / "My Downloads"
    agent = await keeper_ready(
        stack, keeper, gateway={"downloads": "user"}, env={"XDG_DOWNLOAD_DIR": str(downloads)}
    )
    home = tmp_path / "home"
    (home / "lists").mkdir(parents=True)
    chat = _Chat(stack.data_dir, home)
    try:
        await chat.shows("type a message")
        await ask(agent, "t-1", "notification.show", NOTE, purpose="to say the tea is ready")
        await chat.shows("/4 Deny")
        assert chat.count("keeper asks to show you notifications: to say the tea is ready")
        chat.type("/3")  # Always allow
        assert (await outcome(stack, "t-1"))["status"] == "completed"
        await chat.shows("  ! Keeper: Tea — ready")
        await ask(agent, "t-2", "file.save", {"name": "a", "data_base64": ""}, front=True)
        await chat.shows("keeper asks to save a file on your computer")
        chat.type("/dismiss")
        assert (await outcome(stack, "t-2"))["status"] == "cancelled_by_user"
        await _a_file_attached_and_saved(agent, chat, home, downloads)
        chat.type("/quit")
        assert chat.process.wait(10) == 0
    finally:
        chat.close()
    assert chat.count("  ! Keeper:") == 1  # shown once


async def _a_file_attached_and_saved(
    agent: Agent, chat: _Chat, home: Path, downloads: Path
) -> None:
    """The app asks for a file: the card says how to attach one and what the app takes; a
    folder is refused in a sentence, a file is the app's as bytes and a name. Then two
    saves of one name land in the downloads folder the environment names, numbered."""
    stack = agent.stack
    groceries = b"milk\neggs\n"
    (home / "lists" / "groceries.txt").write_bytes(groceries)
    wanted = {"accept": ["text/plain"], "max_bytes": 1000}
    await ask(agent, "t-3", "file.open", wanted, front=True, purpose="to read your list")
    await chat.shows("     /attach PATH  choose the file: plain text, up to 1000 bytes")
    chat.type("/attach ~/lists")
    await chat.shows("~/lists is a folder: give the path of a file in it")
    chat.type("/attach ~/lists/groceries.txt")
    opened = await outcome(stack, "t-3")
    assert opened["status"] == "completed", opened
    reference = opened["output"]["artifact"]
    assert (reference["title"], reference["media_type"], reference["size"]) == (
        "groceries.txt",
        "text/plain",
        10,
    )
    assert str(home) not in json.dumps(opened)  # the app never learns where it was
    digest = {"artifact_id": reference["artifact_id"]}
    await agent.client.submit(agent.invoke("call_t-4", "keeper.digest", digest))
    assert await outcome(stack, "t-4") == {
        "sha256": hashlib.sha256(groceries).hexdigest(),
        "size": 10,
        "media_type": "text/plain",
    }

    data = {"name": "list.txt", "data_base64": base64.b64encode(groceries).decode()}
    await ask(agent, "t-5", "file.save", data, front=True, purpose="to keep your list")
    await chat.shows("keeper asks to save a file on your computer: to keep your list")
    chat.type("/2")  # allowed until the runtime restarts: the second save asks nothing
    assert (await outcome(stack, "t-5"))["output"] == {"name": "list.txt"}
    await ask(agent, "t-6", "file.save", data, front=True)
    assert (await outcome(stack, "t-6"))["output"] == {"name": "list (1).txt"}
    assert sorted(os.listdir(downloads)) == ["list (1).txt", "list.txt"]
    assert (downloads / "list (1).txt").read_bytes() == groceries
    assert not (stack.data_dir / "downloads").exists()
    where = "saved as list.txt in the user's downloads folder"
    assert any(where in detail for detail in audit_details(stack))
