"""The terminal chat: what it prints for a view, what a typed line becomes, and a session
through `lineup chat attach` against a real runtime (embedded AppServer and demo agent), on
a host with a real sound server (PulseAudio with a null sink), which plays the agent's
speech in voice mode."""

from __future__ import annotations

import array
import io
import math
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from actors.store import read_lifecycle
from apps.chat import history
from contracts import utc_timestamp
from lineup.terminal_chat import (
    COMMANDS,
    TaskLine,
    _Screen,
    catch_up,
    parse_line,
    render_new,
)
from tests.kernel.helpers import REPO_ROOT
from tests.sound import SoundServer, sound_server

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


def _asked(*requests: dict[str, Any]) -> dict[str, Any]:
    """A view with `requests` asked in this order and all still open."""
    timeline = [
        {
            "id": r["message_id"],
            "sender": "agent:demo",
            "kind": "interaction",
            "text": r["prompt"],
            "interaction": r,
            "state": "waiting",
        }
        for r in requests
    ]
    return _view(timeline=timeline, pending_interactions=list(requests))


def _shown(lines: list[Any]) -> list[str]:
    return [line.text.plain if isinstance(line, TaskLine) else line.plain for line in lines]


CONFIRM = {"kind": "confirm", "prompt": "Sure?", "interaction_id": "ok.1", "message_id": "M2"}
INPUT = {"kind": "input", "prompt": "Name?", "interaction_id": "name.1", "message_id": "M3"}


def test_each_item_is_printed_once_and_again_when_its_state_changes() -> None:
    seen: dict[str, str] = {}
    item = {"id": "A", "sender": "user", "shown": "hi", "state": "pending"}
    assert _shown(render_new(_view(timeline=[item]), seen)) == ["[you] hi  (pending)"]
    assert render_new(_view(timeline=[item]), seen) == []
    accepted = {**item, "state": "accepted"}
    assert _shown(render_new(_view(timeline=[accepted]), seen)) == ["  ↳ hi … now accepted"]
    asked = _shown(render_new(_view(pending_interactions=[CHOICE]), seen))
    assert asked == ["  ? q1 Which colour?", "     /1 Red", "     /2 Green"]
    assert render_new(_view(pending_interactions=[CHOICE]), seen) == []
    markdown = {
        "id": "B",
        "sender": "agent:demo",
        "text": "**hi** <b>x</b> [go](http://e)",
        "format": "markdown",
        "state": "received",
    }
    header, body = render_new(_view(timeline=[markdown]), seen)
    assert isinstance(header, Text) and header.plain == "[agent:demo]  (received)"
    assert isinstance(body, Markdown)
    assert body.markup == "**hi** &lt;b&gt;x&lt;/b&gt; go (http://e)"
    assert body.hyperlinks is False


def test_task_progress_names_the_task_and_is_one_line_that_changes() -> None:
    seen: dict[str, str] = {}
    tool = {"label": "pomodoro · timer.start", "status": "running", "percent": 0}
    agent = {"title": "demo.M1", "label": "Thinking it over", "status": "running", "percent": 50}
    first = render_new(_view(tasks={"call-1": tool, "demo.M1": agent}), seen)
    assert _shown(first) == [
        "  [task] pomodoro · timer.start: 0 % (running)",
        "  [task] demo.M1 — Thinking it over: 50 % (running)",
    ]
    assert all(isinstance(line, TaskLine) and line.status_changed for line in first)
    assert render_new(_view(tasks={"call-1": tool}), seen) == []
    (moved,) = render_new(_view(tasks={"call-1": {**tool, "percent": 60}}), seen)
    assert isinstance(moved, TaskLine) and moved.task_id == "call-1"
    assert not moved.status_changed  # the same line, rewritten in place on a terminal
    (done,) = render_new(
        _view(tasks={"call-1": {**tool, "percent": 75, "status": "succeeded"}}), seen
    )
    assert isinstance(done, TaskLine) and done.status_changed
    # Ended, a task shows no progress stuck where it stopped, and says it in a person's word.
    assert done.text.plain == "  [task] pomodoro · timer.start (done)"


def _on_the_wall(moment: datetime) -> str:
    """A moment as the local clock reads it, its date said when it is not today."""
    local = moment.astimezone()
    if local.date() == datetime.now().astimezone().date():
        return local.strftime("%H:%M")
    return f"{local.strftime('%b')} {local.day} {local.strftime('%H:%M')}"


def test_a_timer_kept_by_the_runtime_is_a_line_on_the_local_clock_each_time_it_changes() -> None:
    seen: dict[str, str] = {}
    now = datetime.now(UTC)
    ends = now + timedelta(minutes=24, seconds=10)
    label = "Start a focus timer · Pomodoro"
    call = {"id": "call-1", "sender": "runtime:tools", "kind": "tool", "shown": label}
    running = {"state": "running", "ends_at": utc_timestamp(ends)}
    item = {**call, "state": "running", "deadline": running}
    local = _on_the_wall(ends)
    assert _shown(render_new(_view(timeline=[item]), seen)) == [
        f"[runtime:tools] {label}  (running)",
        f"  ↳ {label}: ends {local} · in 24 min",
    ]
    assert render_new(_view(timeline=[item]), seen) == []  # the same timer: nothing new
    paused = {"state": "paused", "paused_at": utc_timestamp(now), "remaining_ms": 90_000}
    assert _shown(render_new(_view(timeline=[{**item, "deadline": paused}]), seen)) == [
        f"  ↳ {label}: paused at {_on_the_wall(now)} · 2 min left"
    ]
    ended = {"state": "finished", "ended_at": utc_timestamp(ends)}
    assert _shown(
        render_new(_view(timeline=[{**call, "state": "succeeded", "deadline": ended}]), seen)
    ) == [
        f"  ↳ {label} … now done",
        f"  ↳ {label}: ended {local}",
    ]
    # What the agent wrote with a UTC timestamp in it is on the local clock too.
    message = {
        "id": "M9",
        "sender": "agent:demo",
        "text": f"Your timer runs until {utc_timestamp(ends)}.",
        "format": "markdown",
        "state": "received",
    }
    _, body = render_new(_view(timeline=[message]), seen)
    assert isinstance(body, Markdown) and body.markup == f"Your timer runs until {local}."


def test_screen_rewrites_a_task_line_in_place_on_a_terminal_only() -> None:
    line = Text("  [task] t: 10 % (running)")
    later = Text("  [task] t: 20 % (running)")
    terminal = io.StringIO()
    screen = _Screen(Console(file=terminal, force_terminal=True, width=80, color_system=None))
    screen.print(TaskLine("t", line, True))
    screen.print(TaskLine("t", later, False))
    assert terminal.getvalue() == f"{line.plain}\n\x1b[1A\x1b[2K{later.plain}\n"
    screen.typed()  # a typed line moved the cursor: the next update is a new line
    screen.print(TaskLine("t", later, False))
    assert terminal.getvalue().endswith(f"{later.plain}\n{later.plain}\n")
    piped = io.StringIO()
    screen = _Screen(Console(file=piped, force_terminal=False, width=80))
    for text, changed in ((line, True), (later, False), (Text("  [task] t: done"), True)):
        screen.print(TaskLine("t", text, changed))
    assert piped.getvalue() == f"{line.plain}\n  [task] t: done\n"


def test_open_questions_are_listed_again_when_the_runtime_is_back() -> None:
    seen: dict[str, str] = {}
    view = _asked(CHOICE, CONFIRM)
    first = _shown(catch_up(view, "online", seen))
    assert "  ? q1 Which colour?" in first and "  ? q2 Sure?" in first
    assert catch_up(view, "online", seen) == []
    assert _shown(catch_up(view, "stopped", seen)) == ["  (runtime stopped)"]
    again = _shown(catch_up(view, "online", seen))
    assert again == [
        "  (runtime online)",
        "  ? q1 Which colour?",
        "     /q1 1 Red",
        "     /q1 2 Green",
        "  ? q2 Sure?",
        "     /q2 yes or /q2 no",
    ]


def test_typed_lines_become_declarative_inputs_or_say_why_not() -> None:
    view = _asked(CHOICE)
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
    assert parse_line("/q1 2", view, "c") == parse_line("/2", view, "c")
    assert parse_line("/3", view, "c") == "pick /1 to /2"
    assert parse_line("/yes", view, "c") == "q1 is answered with /1 to /2"
    assert parse_line("/say blue", view, "c") == "q1 is answered with /1 to /2"
    assert parse_line("/frobnicate", view, "c") == (
        "unknown command /frobnicate; /help lists the commands"
    )
    assert parse_line("/hlep", view, "c") == (
        "unknown command /hlep (did you mean /help?); /help lists the commands"
    )
    assert parse_line("   ", view, "c") == "nothing to send: type a message, or /help"
    assert parse_line("/yes", _view(), "c") == "no question is waiting for an answer"
    labelled = {**CONFIRM, "confirm_label": "Deploy [b]now[/b]", "cancel_label": "Wait"}
    assert _shown(render_new(_asked(labelled), {}))[-1] == (
        "     /yes (Deploy [b]now[/b]) or /no (Wait)"
    )


def test_help_lists_every_command() -> None:
    shown = parse_line("/help", _view(), "c")
    assert isinstance(shown, str)
    for command in ("/1", "/yes", "/no", "/say TEXT", "/q2 ANSWER", "/questions", "/quit"):
        assert command in shown
    assert shown.count("\n") == len(COMMANDS)  # and /quit


def test_help_says_what_quit_does_for_who_started_the_runtime() -> None:
    attached = parse_line("/help", _view(), "c")
    started = parse_line("/help", _view(), "c", quit_stops=True)
    assert isinstance(attached, str)
    assert isinstance(started, str)
    assert "/quit" in attached.splitlines()[-1]
    assert "runtime keeps running" in attached.splitlines()[-1]
    assert "stop the runtime" in started.splitlines()[-1]
    assert "keeps running" not in started


def test_extra_words_and_empty_answers_are_refused_with_a_hint() -> None:
    choice = _asked(CHOICE)
    hint = "/1 takes nothing after it; to send a message, type it without /"
    assert parse_line("/1 extra", choice, "c") == hint
    assert parse_line("/q1", choice, "c") == "give the answer after /q1: /q1 1 to /q1 2"
    assert parse_line("/q1 2 more", choice, "c") == "q1 is answered with /q1 1 to /q1 2"
    confirm = _asked(CONFIRM)
    assert parse_line("/yes please", confirm, "c") == (
        "/yes takes nothing after it; to send a message, type it without /"
    )
    text = _asked(INPUT)
    assert parse_line("/say", text, "c") == "type the answer after /say, e.g. /say blue"
    assert parse_line("/say   ", text, "c") == "type the answer after /say, e.g. /say blue"
    assert parse_line("/1", text, "c") == "q1 is answered with /say TEXT"
    assert parse_line("/say yes", text, "c") == {
        "kind": "answer",
        "conversation_id": "c",
        "interaction_id": "name.1",
        "text": "yes",
    }


def test_several_open_questions_are_answered_by_id() -> None:
    view = _asked(CHOICE, CONFIRM, INPUT, {**CHOICE, "interaction_id": "c.2", "message_id": "M4"})
    asked = parse_line("/1", view, "c")
    assert isinstance(asked, str)
    assert asked.splitlines() == [
        "2 open questions take /1; say which, e.g. /q1 1",
        "  ? q1 Which colour?",
        "     /q1 1 Red",
        "     /q1 2 Green",
        "  ? q2 Sure?",
        "     /q2 yes or /q2 no",
        "  ? q3 Name?",
        "     /q3 TEXT",
        "  ? q4 Which colour?",
        "     /q4 1 Red",
        "     /q4 2 Green",
    ]
    assert parse_line("/questions", view, "c") == "\n".join(asked.splitlines()[1:])
    # An answer that fits one open question only answers that one.
    assert parse_line("/yes", view, "c") == {
        "kind": "answer",
        "conversation_id": "c",
        "interaction_id": "ok.1",
        "confirmed": True,
    }
    assert parse_line("/say the blue one", view, "c") == parse_line("/q3 the blue one", view, "c")
    assert parse_line("/3", view, "c") == (
        "none of the open questions takes /3; answer one as shown:\n"
        + "\n".join(asked.splitlines()[1:])
    )
    assert parse_line("/yes please", view, "c") == (
        "/yes takes nothing after it; to send a message, type it without /"
    )
    two_inputs = _asked(INPUT, {**INPUT, "interaction_id": "n.2", "message_id": "M5"})
    said = parse_line("/say hi", two_inputs, "c")
    assert isinstance(said, str)
    assert said.splitlines()[0] == "2 open questions take /say; say which, e.g. /q1 TEXT"
    assert isinstance(parse_line("/q1 hi", two_inputs, "c"), dict)
    assert parse_line("/q2 no", view, "c") == {
        "kind": "answer",
        "conversation_id": "c",
        "interaction_id": "ok.1",
        "confirmed": False,
    }
    assert parse_line("/q3 the blue one", view, "c") == {
        "kind": "answer",
        "conversation_id": "c",
        "interaction_id": "name.1",
        "text": "the blue one",
    }
    assert parse_line("/q2 1", view, "c") == "q2 is answered with /q2 yes or /q2 no"
    assert parse_line("/q9 1", view, "c") == "q9 is not open; open now: q1, q2, q3, q4"
    # q1 and q4 answered: the others keep their ids.
    answered = {**view, "pending_interactions": [CONFIRM, INPUT]}
    assert parse_line("/q2 yes", answered, "c") == parse_line("/q2 yes", view, "c")
    assert parse_line("/q1 1", answered, "c") == "q1 is not open; open now: q2, q3"
    # A fresh screen (after a restart) lists every open question with its id.
    shown = _shown(render_new(answered, {}))
    assert shown[-4:] == ["  ? q2 Sure?", "     /q2 yes or /q2 no", "  ? q3 Name?", "     /q3 TEXT"]
    assert shown[0] == "[agent:demo] asks q1: Which colour?  (waiting)"


def _type(chat: subprocess.Popen[str], text: str) -> None:
    assert chat.stdin is not None
    chat.stdin.write(text)
    chat.stdin.flush()


def _quit(chat: subprocess.Popen[str]) -> int:
    """The user types /quit: the terminal chat's exit status."""
    _type(chat, "/quit\n")
    return chat.wait(10)


@pytest.fixture
def sound(tmp_path: Path) -> Iterator[SoundServer]:
    with sound_server(tmp_path / "sound") as server:
        yield server


class Listening:
    """What the sound server's sink plays, heard from its monitor (`parec`): `loud` once a
    quarter second of it is sound, not silence."""

    def __init__(self, sound: SoundServer) -> None:
        self.loud = threading.Event()
        self.process = subprocess.Popen(
            ["parec", "--raw", "--format=s16le", "--rate=16000", "--channels=1"],
            env={**os.environ, **sound.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.reader = threading.Thread(target=self._listen, daemon=True)
        self.reader.start()

    def _listen(self) -> None:
        assert self.process.stdout is not None
        while chunk := self.process.stdout.read(8000):
            samples = array.array("h", chunk[: len(chunk) // 2 * 2])
            if math.sqrt(sum(x * x for x in samples) / max(1, len(samples))) > 500:
                self.loud.set()

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.reader.join(5)  # its pipe ends with the process
        assert self.process.stdout is not None
        self.process.stdout.close()


def _attach(data_dir: Path, env: dict[str, str]) -> subprocess.Popen[str]:
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
        env={**os.environ, **env, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


async def test_a_session_in_lineup_chat_attach(tmp_path: Path, sound: SoundServer) -> None:
    data_dir = tmp_path / "data"
    runtime = _start(data_dir, tmp_path / "run.log")
    chat = None
    try:

        def online() -> bool:
            assert runtime.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            record = read_lifecycle(data_dir) if (data_dir / "runtime.db").exists() else None
            return record is not None and record["state"] == "online"

        await wait_for(online, 30, "the runtime to be online")
        chat = _attach(data_dir, sound.env)
        screen: list[str] = []
        reader = threading.Thread(target=lambda: screen.extend(chat.stdout or []), daemon=True)
        reader.start()

        def count(text: str) -> int:
            return sum(text in line for line in screen)

        _type(chat, "ask me something\n")
        await wait_for(lambda: count("/2 Green"), 30, "the choice")
        assert any(line.startswith("[you] ask me something") for line in screen)
        _type(chat, "/2 please\n/help\n")  # refused with a hint; the help
        await wait_for(lambda: count("/questions"), 30, "the help")
        assert count("/2 takes nothing after it")
        _type(chat, "/2\n")
        await wait_for(lambda: count("     /yes"), 30, "the confirm")
        # The user writes instead of answering: the agent withdraws its open question (q2),
        # which takes no answer now.
        _type(chat, "hello\n")
        await wait_for(lambda: count("now withdrawn"), 30, "the confirm withdrawn")
        _type(chat, "/q2 yes\n")
        await wait_for(lambda: count("q2 is no longer asked"), 30, "the refusal of /q2")
        # Asked again, only the new confirm is open: /yes names it alone.
        _type(chat, "ask me something\n")
        await wait_for(lambda: count("/2 Green") == 2, 30, "the second choice")
        _type(chat, "/2\n")
        await wait_for(lambda: count("     /yes") == 2, 30, "the second confirm")
        _type(chat, "/yes\n")
        await wait_for(lambda: count("Great, let's do it."), 30, "the confirm answered")
        await _voice_mode(chat, count, data_dir, sound)
        assert _quit(chat) == 0
        reader.join(5)
        assert count("[you] ask me something") == 2
        assert sum(line.startswith("[you] chose ") for line in screen) == 2  # only each /2
        assert sum(line.startswith("[you] confirmed") for line in screen) == 1
        assert not count("open questions take /yes"), screen
        tasks = [line for line in screen if line.startswith("  [task] demo.")]
        assert tasks and tasks[-1].rstrip().endswith("(done)"), screen
        # A line when each task starts and when it ends.
        assert len(tasks) == len(set(tasks)) <= 4
    finally:
        if chat is not None:
            if chat.poll() is None:
                chat.kill()
            chat.wait()
            for pipe in (chat.stdin, chat.stdout):
                if pipe is not None:
                    pipe.close()
        _stop(runtime)


async def _voice_mode(
    chat: subprocess.Popen[str], count: Any, data_dir: Path, sound: SoundServer
) -> None:
    """/mode says which mode, /mode audio switches it (the chat keeps it), and the agent's
    next answer is spoken, played through the sound server; /mode im switches back."""
    _type(chat, "/mode\n")
    await wait_for(lambda: count("this conversation is in text mode"), 30, "the mode")
    _type(chat, "/mode audio\n")
    await wait_for(lambda: count("(voice mode: the agent's messages are spoken)"), 30, "on")
    assert history(data_dir, "term")["mode"] == "audio"
    listening = Listening(sound)
    try:
        _type(chat, "hello\n")

        def spoken() -> bool:
            return any(item.get("speech") for item in history(data_dir, "term")["timeline"])

        await wait_for(spoken, 60, "the agent's answer spoken")
        await wait_for(listening.loud.is_set, 60, "the speech played by the sound server")
    finally:
        listening.stop()
    _type(chat, "/mode im\n")
    await wait_for(lambda: count("(text mode: the agent's messages are shown only)"), 30, "off")
    assert history(data_dir, "term")["mode"] == "im"
