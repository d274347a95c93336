"""What a page may say on its WebSocket, checked before anything becomes a UI action.

The page is the user's, but its socket is a door into the user's side: every frame is
checked for its size, its type and each field (no unknown field, every string bounded),
and a frame that fails is answered with one sentence and acts on nothing. Who sent it is
never read from a frame: the host learns it from the UI socket (sender `ui`), and the
web host names the UI session itself.

| frame `t` | fields | becomes |
|---|---|---|
| `hello` | `page`, `conversation`, `since`, `open` | the page's subscription (`Hello`) |
| `act` | `client_id`, `app` (`chat`, `app-registry`), `input` | `host.ui.action` |
| `intent` | `client_id`, `intent` (open, focus, close app), `app_scope` | `host.intent` |
| `notified` | `id` (a notification's), `as` (`system`, `toast`) | the page showed it |
| `save` | `client_id`, `artifact_id` (one the page's conversation shows) | a save (`_artifacts`) |
| `choose` | `client_id`, `interaction_id` (a card asking for a file) | an upload (`_uploads`) |
| `record` | `client_id`, `interaction_id` (a card asking to record) | a recording (`_uploads`) |
| `talk` | `client_id` (the page's id for the press) | a push-to-talk recording for the chat |

`client_id` is the page's id for the action (a message id: 26 characters of Crockford
base32): sent again after a reconnect, it names the same UI action, which the runtime's
mailbox then keeps once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from actors.kernel import is_valid_id
from actors.store import is_artifact_id
from contracts import is_app_scope, is_conversation_id

from ._notifications import MAX_NOTIFICATION_ID, SHOWN_AS

MAX_FRAME: Final = 64 * 1024  # characters of one frame from the page
MAX_TEXT: Final = 16_000  # characters of a message or a typed answer
MAX_ID: Final = 128
MAX_SELECTED: Final = 32
MAX_OPEN: Final = 200  # items a page says it holds in a state that may still change
PAGE_ID: Final = re.compile(r"^[A-Za-z0-9]{8,32}$")
REGISTRY_KINDS: Final = frozenset({"enable", "disable", "set_default", "remove"})
INTENTS: Final = frozenset({"open_app", "focus_app", "close_app"})
MODES: Final = frozenset({"im", "audio"})  # the chat's modes


class Refused(Exception):
    """A frame the web host will not act on: `str(self)` is the sentence for the user."""


@dataclass(frozen=True)
class Hello:
    page: str
    conversation: str
    since: int
    still_open: frozenset[str]


@dataclass(frozen=True)
class Action:
    client_id: str
    message_type: str  # host.ui.action or host.intent
    body: dict[str, Any]  # without the session id, which the web host adds


@dataclass(frozen=True)
class Save:
    client_id: str
    artifact_id: str


@dataclass(frozen=True)
class Choose:
    client_id: str
    interaction_id: str


# A `record` frame has a `choose` frame's fields: the action, and the card it answers.
Record = Choose


@dataclass(frozen=True)
class Talk:
    client_id: str


def _fields(
    frame: dict[str, Any], required: set[str], optional: frozenset[str] = frozenset()
) -> None:
    missing = required - frame.keys()
    unknown = frame.keys() - required - optional
    if missing:
        raise Refused(f"The page sent an incomplete request (no {sorted(missing)[0]}): reload it.")
    if unknown:
        raise Refused(f"The page sent an unknown field ({sorted(unknown)[0][:40]}): reload it.")


def _text(value: Any, what: str) -> str:
    """What the user typed: text, not blank, at most `MAX_TEXT` characters."""
    if not isinstance(value, str):
        raise Refused(f"The page sent a {what} that is not text: reload it.")
    if not value.strip():
        raise Refused(f"The {what} is empty: type something first.")
    if len(value) > MAX_TEXT:
        raise Refused(f"The {what} is too long: keep it under {MAX_TEXT:,} characters.")
    return value


def _id(value: Any, what: str) -> str:
    """An id the page took from what it was shown: text of 1 to `MAX_ID` characters."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID:
        raise Refused(f"The page sent a bad {what}: reload it.")
    return value


def parse_frame(raw: str) -> dict[str, Any]:
    if len(raw) > MAX_FRAME:
        raise Refused(f"That is too much at once: keep a message under {MAX_TEXT:,} characters.")
    try:
        frame = json.loads(raw)
    except ValueError:
        raise Refused("The page sent something unreadable: reload it.") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("t"), str):
        raise Refused("The page sent something unreadable: reload it.")
    return frame


def hello(frame: dict[str, Any]) -> Hello:
    """The first frame of a page's socket: which conversation, from which position."""
    if frame["t"] != "hello":
        raise Refused("The page must say hello first: reload it.")
    _fields(frame, {"t", "page", "conversation", "since", "open"})
    page, conversation, since = frame["page"], frame["conversation"], frame["since"]
    if not isinstance(page, str) or not PAGE_ID.match(page):
        raise Refused("The page sent a bad page id: reload it.")
    if not is_conversation_id(conversation):
        raise Refused("There is no such conversation: open the page's address again.")
    if not isinstance(since, int) or isinstance(since, bool) or since < 0:
        raise Refused("The page sent a bad position: reload it.")
    still_open = frame["open"]
    if not isinstance(still_open, list) or len(still_open) > MAX_OPEN:
        raise Refused("The page sent a bad list of open items: reload it.")
    return Hello(page, conversation, since, frozenset(_id(i, "item id") for i in still_open))


def notified(frame: dict[str, Any]) -> tuple[str, str]:
    """A `notified` frame: which notification the page showed, and how."""
    _fields(frame, {"t", "id", "as"})
    if frame["as"] not in SHOWN_AS:
        raise Refused("The page showed a notification in a way it cannot: reload it.")
    given = frame["id"]
    if not isinstance(given, str) or not 0 < len(given) <= MAX_NOTIFICATION_ID:
        raise Refused("The page sent a bad notification id: reload it.")
    return given, str(frame["as"])


def _client_id(frame: dict[str, Any]) -> str:
    client_id = frame.get("client_id")
    if not isinstance(client_id, str) or not is_valid_id(client_id):
        raise Refused("The page sent a bad action id: reload it.")
    return client_id


def save(frame: dict[str, Any]) -> Save:
    """A `save` frame: the user's Save of an artifact, named by its id (never a path)."""
    client_id = _client_id(frame)
    _fields(frame, {"t", "client_id", "artifact_id"})
    if not is_artifact_id(frame["artifact_id"]):
        raise Refused("The page named a file that is not there: reload it.")
    return Save(client_id, frame["artifact_id"])


def choose(frame: dict[str, Any]) -> Choose:
    """A `choose` frame: the user picked a file for the card `interaction_id`; the bytes
    go by an upload of their own, never in a frame."""
    client_id = _client_id(frame)
    _fields(frame, {"t", "client_id", "interaction_id"})
    return Choose(client_id, _id(frame["interaction_id"], "question id"))


def action(frame: dict[str, Any], conversation: str) -> Action:
    """An `act` or `intent` frame as the UI action or host intent it asks for."""
    if frame["t"] not in ("act", "intent"):
        raise Refused("The page sent a request this host does not know: reload it.")
    client_id = _client_id(frame)
    if frame["t"] == "intent":
        _fields(frame, {"t", "client_id", "intent", "app_scope"})
        if frame["intent"] not in INTENTS:
            raise Refused("The page asked for something it cannot do: reload it.")
        if not is_app_scope(frame["app_scope"]):
            raise Refused("There is no such app: pick one from the list.")
        body = {"intent": frame["intent"], "app_scope": frame["app_scope"]}
        return Action(client_id, "host.intent", body)
    _fields(frame, {"t", "client_id", "app", "input"})
    given = frame["input"]
    if not isinstance(given, dict):
        raise Refused("The page sent an action without its fields: reload it.")
    if frame["app"] == "chat":
        checked = chat_input(given, conversation)
    elif frame["app"] == "app-registry":
        checked = registry_input(given)
    else:
        raise Refused("The page named an app without a page here: reload it.")
    return Action(client_id, "host.ui.action", {"app_scope": frame["app"], "input": checked})


def chat_input(given: dict[str, Any], conversation: str) -> dict[str, Any]:
    """The chat app's input: `send`, `answer`, `stop`, `dismiss` or `mode` (`im`, `audio`),
    in the page's conversation (never one the frame names)."""
    kind = given.get("kind")
    body: dict[str, Any] = {"kind": kind, "conversation_id": conversation}
    if kind == "send":
        _fields(given, {"kind", "text"})
        body["text"] = _text(given["text"], "message")
    elif kind == "answer":
        _fields(given, {"kind", "interaction_id"}, frozenset({"selected", "confirmed", "text"}))
        body["interaction_id"] = _id(given["interaction_id"], "question id")
        answers = given.keys() & {"selected", "confirmed", "text"}
        if len(answers) != 1:
            raise Refused("An answer needs exactly one choice, yes or no, or text: try again.")
        if "selected" in given:
            selected = given["selected"]
            if not isinstance(selected, list) or not 1 <= len(selected) <= MAX_SELECTED:
                raise Refused("Pick at least one of the options.")
            body["selected"] = [_id(option, "option") for option in selected]
        elif "confirmed" in given:
            if not isinstance(given["confirmed"], bool):
                raise Refused("The page sent a yes or no that is neither: reload it.")
            body["confirmed"] = given["confirmed"]
        else:
            body["text"] = _text(given["text"], "answer")
    elif kind == "stop":
        _fields(given, {"kind", "call_id"})
        body["call_id"] = _id(given["call_id"], "tool call id")
    elif kind == "dismiss":
        _fields(given, {"kind", "interaction_id"})
        body["interaction_id"] = _id(given["interaction_id"], "question id")
    elif kind == "mode":
        _fields(given, {"kind", "mode"})
        if given["mode"] not in MODES:
            raise Refused("The chat has no such mode: reload the page.")
        body["mode"] = given["mode"]
    else:
        raise Refused("The chat cannot do that: reload the page.")
    return body


def registry_input(given: dict[str, Any]) -> dict[str, Any]:
    """The app registry's input: enable, disable, set_default, or remove once confirmed."""
    kind = given.get("kind")
    if kind not in REGISTRY_KINDS:
        raise Refused("The app registry cannot do that from this page.")
    if kind == "remove":
        _fields(given, {"kind", "app_scope", "confirmed"})
        if given["confirmed"] is not True:
            raise Refused("Removing an app needs your confirmation: confirm it first.")
    else:
        _fields(given, {"kind", "app_scope"})
    if not is_app_scope(given["app_scope"]):
        raise Refused("There is no such app: pick one from the list.")
    body = {"kind": kind, "app_scope": given["app_scope"]}
    if kind == "remove":
        body["confirmed"] = True
    return body


def record(frame: dict[str, Any]) -> Record:
    """A `record` frame: the user pressed "Start recording" on the card `interaction_id`;
    the recording goes by an upload of its own, never in a frame."""
    client_id = _client_id(frame)
    _fields(frame, {"t", "client_id", "interaction_id"})
    return Record(client_id, _id(frame["interaction_id"], "question id"))


def talk(frame: dict[str, Any]) -> Talk:
    """A `talk` frame: the user pressed the chat's talk button (its audio mode); the
    recording goes by an upload of its own, never in a frame."""
    client_id = _client_id(frame)
    _fields(frame, {"t", "client_id"})
    return Talk(client_id)
