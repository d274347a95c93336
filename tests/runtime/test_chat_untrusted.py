"""Untrusted text stays text: what a real agent writes (console markup, ANSI and OSC escape
sequences, bidi controls) reaches the user's screen as the characters it is made of, in
`lineup chat history` and in the terminal chat alike. Checked on the bytes each prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import trio

from tests.kernel.helpers import REPO_ROOT

from .helpers import CONVERSATION, Stack, wait_for

MARKUP = "[bold magenta]x[/bold magenta] [link=http://evil]click[/link]"
ESCAPES = "\x1b[31mred\x1b[0m \x1b]8;;http://evil\x07osc\x1b]8;;\x07 \x1b]0;title\x07 \x9bX"
BIDI = "abc\u202edcba\u202c \u2066iso\u2069 zero\u200bwidth"
HOSTILE = f"{MARKUP} {ESCAPES} {BIDI}"
# What the user must read instead: markup as typed, every control written out.
SHOWN_ESCAPES = (
    "\\x1b[31mred\\x1b[0m \\x1b]8;;http://evil\\x07osc\\x1b]8;;\\x07 \\x1b]0;title\\x07 \\x9bX"
)
SHOWN_BIDI = "abc<U+202E>dcba<U+202C> <U+2066>iso<U+2069> zero<U+200B>width"
RAW_BIDI = [c.encode() for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b"]


def _lineup(*command: str) -> list[str]:
    return [sys.executable, "-m", "lineup.cli", *command, "--conversation", CONVERSATION]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    return {**env, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "400", **extra}


async def _history(stack: Stack, **env: str) -> bytes:
    done = await trio.run_process(
        [*_lineup("chat", "history"), "--data-dir", str(stack.data_dir)],
        cwd=REPO_ROOT,
        env=_env(**env),
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return bytes(done.stdout)


def _attach(stack: Stack) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*_lineup("chat", "attach"), "--data-dir", str(stack.data_dir)],
        cwd=REPO_ROOT,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


async def _terminal_chat(stack: Stack) -> bytes:
    """What `lineup chat attach` prints until it shows the open question's options."""
    chat = _attach(stack)
    screen = bytearray()
    assert chat.stdout is not None and chat.stdin is not None
    stdout, fd = chat.stdout, chat.stdout.fileno()

    def read() -> None:
        for chunk in iter(lambda: os.read(fd, 65536), b""):
            screen.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    try:
        reader.start()
        chat.stdin.write(b"/questions\n")
        chat.stdin.flush()
        await wait_for(lambda: chat.poll() is not None or b"/2 " in screen, 30, "the choice")
        chat.stdin.write(b"/quit\n")
        chat.stdin.flush()
        await wait_for(lambda: chat.poll() is not None, 30, "the chat to end")
        reader.join(10)
    finally:
        if chat.poll() is None:
            chat.kill()
        chat.wait()
        chat.stdin.close()
        stdout.close()
    assert chat.returncode == 0, bytes(screen).decode(errors="replace")
    return bytes(screen)


def _assert_safe(output: bytes, *, colours: bool = False) -> None:
    for raw in RAW_BIDI:
        assert raw not in output, raw
    assert b"\x07" not in output and "\x9b".encode() not in output
    if colours:  # the only escapes are the console's own colours (SGR), no OSC, no others
        assert re.sub(rb"\x1b\[[0-9;]*m", b"", output).count(b"\x1b") == 0
    else:
        assert b"\x1b" not in output


def _one_line(output: bytes) -> bytes:
    """The output with the console's colours taken out, its table borders and line breaks
    joined, so a wrapped cell reads as one text."""
    text = re.sub(rb"\x1b\[[0-9;]*m", b"", output).decode()
    return re.sub(r"\s*[│┃|]\s*|\n\s*", " ", text).encode()


async def test_agent_text_prints_literally_in_history_and_terminal_chat(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, HOSTILE, format="plain")
    await agent.send_text(CONVERSATION, f"**md** {HOSTILE}", format="markdown")
    await agent.send_task_progress(CONVERSATION, "job-1", "running", percent=40, label=HOSTILE)
    await agent.ask_choice(CONVERSATION, f"pick {MARKUP}", {"a": f"opt {ESCAPES}", "b": BIDI})
    await wait_for(lambda: len(stack.timeline()) >= 3, 30, "the agent's text in the chat")

    for env, colours in (({}, False), ({"NO_COLOR": "1"}, False), ({"FORCE_COLOR": "1"}, True)):
        output = await _history(stack, **env)
        _assert_safe(output, colours=colours)
        flat = _one_line(output)
        assert MARKUP.encode() in flat, output
        assert SHOWN_ESCAPES.encode() in flat, output
        assert SHOWN_BIDI.encode() in flat, output
        assert f"pick {MARKUP}".encode() in flat
        assert f"opt {SHOWN_ESCAPES}".encode() in flat
        assert b"task job-1" in flat and b": 40 % (running)" in flat
        assert (b"\x1b[" in output) is colours  # colours only when asked for
        assert b"saved state" not in output  # the runtime is running

    # The terminal chat, attached to the same runtime, prints the same text as text.
    output = await _terminal_chat(stack)
    _assert_safe(output)
    flat = _one_line(output)
    assert f"[agent:demo] {MARKUP} {SHOWN_ESCAPES} {SHOWN_BIDI}  (received)".encode() in output
    assert SHOWN_ESCAPES.encode() in flat and SHOWN_BIDI.encode() in flat
    assert f"? q1 pick {MARKUP}".encode() in output
    assert f"/1 opt {SHOWN_ESCAPES}".encode() in output
    assert f"/2 {SHOWN_BIDI}".encode() in output
    assert f"[task] job-1 — {MARKUP}".encode() in flat
