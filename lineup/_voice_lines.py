"""The chat's audio mode in the terminal: `/mode`, the line that says the mode changed, and
the agent's speech played through the sound server.

`/mode audio` and `/mode im` ask the chat to switch the conversation's mode (a UI action,
`mode`); `/mode` alone says which it is in. In audio mode the chat has each agent message
spoken (a WAV artifact of the chat's, part by part, `apps/chat/_voice.py`); the terminal
plays the parts that arrive while it is attached, in order, one at a time, with `paplay`
where a PulseAudio or PipeWire server is there to reach, else `aplay` where ALSA has a sound
card; with neither it shows nothing more than the text. The bytes are read from the
runtime's artifacts (`read_artifact_data`: the whole file, as the store recorded it) in this
process, the user's own, and handed to the player on its standard input.
"""

from __future__ import annotations

import os
import queue
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from rich.text import Text

from actors.store import read_artifact_data

MODES: Final = {
    "audio": "voice mode: the agent's messages are spoken",
    "im": "text mode: the agent's messages are shown only",
}
PLAY_TIMEOUT_S: Final = 30.0  # one part lasts at most six seconds


def mode_request(view: dict[str, Any], conversation: str, rest: str) -> dict[str, Any] | str:
    """`/mode [audio|im]`: the chat's input that switches the mode, or what to tell the user."""
    now = str(view.get("mode") or "im")
    wanted = rest.strip().lower()
    if not wanted:
        other = "im" if now == "audio" else "audio"
        return f"this conversation is in {MODES[now]}; /mode {other} switches"
    if wanted not in MODES:
        return f"/mode takes audio or im, not {wanted[:20]!r}"
    if wanted == now:
        return f"this conversation is in {MODES[now]} already"
    return {"kind": "mode", "conversation_id": conversation, "mode": wanted}


def mode_line(view: dict[str, Any], seen: dict[str, str]) -> list[Text]:
    """A line when the conversation's mode changed since the last look (at the first look,
    only when it is audio)."""
    now = str(view.get("mode") or "im")
    before = seen.get("mode")
    seen["mode"] = now
    if before == now or (before is None and now == "im"):
        return []
    return [Text(f"  ({MODES[now]})", style="dim")]


def player_command(env: Mapping[str, str]) -> list[str] | None:
    """What plays a WAV on standard input here: `paplay` with a sound server to reach
    (PulseAudio's socket, or PipeWire's, in the user's runtime directory, or
    `PULSE_SERVER`), else `aplay` with a sound card; None with neither."""
    path = env.get("PATH", "")
    runtime_dir = env.get("XDG_RUNTIME_DIR", "")
    server = env.get("PULSE_SERVER") or (
        runtime_dir and Path(runtime_dir, "pulse", "native").exists()
    )
    if server and shutil.which("paplay", path=path):
        return ["paplay"]
    cards = Path("/proc/asound/cards")
    has_card = cards.exists() and "no soundcards" not in cards.read_text(errors="replace")
    if has_card and shutil.which("aplay", path=path):
        return ["aplay", "-q"]
    return None


class SpeechPlayer:
    """The parts of speech to play, in order, one at a time, in a thread of its own."""

    def __init__(self, data_dir: Path, command: list[str] | None) -> None:
        self.data_dir = data_dir
        self.command = command
        self.heard: set[str] = set()
        self.waiting: queue.Queue[str | None] = queue.Queue()
        self.started = False
        self.looked = False
        self.played = 0

    def catch_up(self, view: dict[str, Any]) -> None:
        """Queue the speech parts new since the last look (none at the first: what was
        said before the chat was attached is not said again), in audio mode only."""
        first, self.looked = not self.looked, True
        fresh = []
        for item in view.get("timeline", []):
            for part in item.get("speech") or []:
                artifact_id = str(part.get("artifact_id"))
                if artifact_id not in self.heard:
                    self.heard.add(artifact_id)
                    fresh.append(artifact_id)
        if first or self.command is None or view.get("mode") != "audio":
            return
        for artifact_id in fresh:
            self.waiting.put(artifact_id)
        if fresh and not self.started:
            self.started = True
            threading.Thread(target=self._play_each, daemon=True).start()

    def close(self) -> None:
        self.waiting.put(None)

    def _play_each(self) -> None:
        assert self.command is not None
        while (artifact_id := self.waiting.get()) is not None:
            try:
                found = read_artifact_data(self.data_dir, artifact_id)
            except sqlite3.Error:  # the store's file unread now: this one is not said
                found = None
            if found is None:
                continue
            try:
                subprocess.run(
                    self.command,
                    input=found[1],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=PLAY_TIMEOUT_S,
                    check=False,
                    env=dict(os.environ),
                )
            except (OSError, subprocess.TimeoutExpired):
                continue  # a player that failed says nothing: the text is on screen
            self.played += 1
