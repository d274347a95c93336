"""The chat core app (`app.chat`): the user's conversation with the agent.

`_app` is the app; `_markdown` the safe rendering of untrusted text (`visible`: control and
invisible formatting characters written out); `_artifact` how an artifact a tool call
handed the agent is shown (`artifact_label`); `_times` moments on the local clock and a
runtime's timer in words (`local_times`, `deadline_words`); `_default_mode` the mode a new
conversation starts in (`read_default_mode`); `_voice` its audio mode, with `_spoken_text`
what it says aloud of a message; `_refusals` the sentence for an
answer it refused itself (`refusal_sentence`); `_notices` its word to the web host that its
view changed. `history` is what `lineup chat history` prints: the timeline as the user sees
it, read from the app's own log.

**The audio mode, who does what.** Each conversation has a mode, `im` (text) or `audio`
(voice), which only the user switches: the page's Voice switch and the terminal chat's
`/mode` are UI actions (`host.ui.action`, input {`kind`: "mode", `mode`}), checked and
audited by the host as any. A new conversation starts in the user's setting
(`_default_mode`). The chat keeps the mode in its log (an event `mode`, folded into its
view, `sdk.interaction`), so it survives restarts and every page and the terminal read it
from there.

- The agent's message spoken: the chat (`_voice`, `Speaker`): its words (`_spoken_text`:
  Markdown as words, times local) in parts of at most 80 characters, each a `speech.speak`
  request of the chat's (no card, audited), whose WAV artifact is recorded on the message
  (an event `speech`).
- The speech played: the page (`static/voice.js`) and the terminal chat
  (`lineup/_voice_lines.py`) play the parts that arrive after they attached, in order, one
  at a time; the page with its own `<audio>` element on `/artifact/CONVERSATION/ID` (the web
  host serves the chat's speech to that conversation's pages only; the page's policy has
  `media-src 'self'`), with Stop speaking, which, as the talk button does, also silences
  the rest of those messages.
- The user records: the page's talk button (held, or pressed to start and again to send;
  Space and Enter too) opens the microphone and sends `talk`; the web host checks the
  page's conversation is in audio mode and asks the gateway (`capability_gateway.talk`),
  which starts an `audio.record` request of the chat with no card; from there it is the
  page's recording (`actors/web_host/_uploads.py`), kept as the chat's artifact.
- What was said, sent: the chat (`_voice`, `recorded`) asks `speech.transcribe` (no card)
  and dispatches `send_text` with the transcript, `mode: audio` and the recording's
  reference (`audio`), which the router puts in the user's `lineup.message`. No words made
  out is refused by the chat itself (`nothing_heard`), and nothing is sent.

Every user message carries the conversation's `mode`. No app reaches any of this: the
chat's `app.input` is the host's, `app.interaction.*` the gateway's, the operator's and
the settings app's, `capability_gateway.talk` the web host's, and the user's envelopes the
chat's alone (the router refuses `router.action` from any other app); the supervisor
refuses the rest before it is stored (`tests/hostile/test_capabilities.py`). Tested end to
end in Chromium (`tests/installed/test_voice_mode.py`) and in the terminal chat
(`tests/runtime/test_terminal_chat.py`, the answer played by a real PulseAudio and heard
from its null sink's monitor). The chat's speech stays among its artifacts, kept
replaceable: a part is at most 192 KiB (`ArtifactLimits`), and once the chat's artifacts
would pass its quotas the oldest speech goes to make room for the newest; nothing kept any
other way (a recording of the user's) is let go (`actors/store/_artifacts.py`).
"""

import importlib
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apps.sdk import has_events_table, read_view

from ._artifact import artifact_label
from ._default_mode import read_default_mode
from ._markdown import plain, render, safe_markdown_source, visible
from ._refusals import refusal_sentence
from ._times import deadline_words, local_times

if TYPE_CHECKING:
    from ._app import ChatApp


def __getattr__(name: str) -> Any:
    # The app itself (the kernel, the SDK) only where it runs: reading the chat's history on
    # the command line needs its log and its view.
    if name == "ChatApp":
        value = importlib.import_module("._app", __name__).ChatApp
        globals()["ChatApp"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def app_dir(data_dir: str | Path) -> Path:
    """Where the runtime keeps the chat app's private files."""
    return Path(data_dir) / "apps" / "chat"


def has_log(data_dir: str | Path) -> bool:
    """True if the chat app has kept a log in `data_dir` (it ran there at least once)."""
    return (app_dir(data_dir) / "app.db").exists()


def conversations(data_dir: str | Path) -> list[str]:
    """The conversations the chat app has a record of, in the order they began."""
    path = app_dir(data_dir) / "app.db"
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        if not has_events_table(db):
            return []
        rows = db.execute(
            "SELECT conversation_id, MIN(pos) FROM events GROUP BY conversation_id ORDER BY 2"
        ).fetchall()
    finally:
        db.close()
    return [str(row[0]) for row in rows if row[0]]


def history(data_dir: str | Path, conversation_id: str) -> dict[str, Any]:
    """The chat view of `conversation_id`: each timeline item with its message id, sender,
    text (as shown: links written out, no HTML, controls visible) and state."""
    view = read_view(app_dir(data_dir), conversation_id)
    timeline: list[dict[str, Any]] = view["timeline"]
    for item in timeline:
        item["shown"] = plain(item.get("text", ""), item.get("format", "plain"))
    return view


__all__ = [
    "ChatApp",
    "app_dir",
    "artifact_label",
    "conversations",
    "deadline_words",
    "has_log",
    "history",
    "local_times",
    "plain",
    "read_default_mode",
    "refusal_sentence",
    "render",
    "safe_markdown_source",
    "visible",
]
