"""What the terminal chat shows and sends for the capability gateway: the apps'
notifications (with the bell), `/dismiss` of a consent card (a question the runtime asked,
`origin: runtime`, which the user may close without deciding), `/attach PATH`, the file the
user chooses for an app's `file.open` request, and a recording the gateway makes from the
sound server: the line that says it records, and `/stop`.

A file is read here, by the user's own process with the user's own permissions, and sent
to the runtime as bytes with its name, never as a path: the app never learns where it was.
What is wrong with it is said in one sentence before anything is sent (a missing file, a
folder, one that cannot be read, one too large or of a type the app does not take, by the
same rules the runtime checks again from the bytes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from apps.chat import visible
from contracts import (
    ContractError,
    accept_words,
    check_size,
    chosen_type,
    file_wanted,
    size_words,
)


@dataclass(frozen=True)
class Attach:
    """`/attach PATH`: the file at `path` (as typed) for the open request `card`."""

    card: dict[str, Any]
    path: str


@dataclass(frozen=True)
class Chosen:
    """A file read for a request: what the host is sent (`host.file.chosen`)."""

    request_id: str
    name: str
    data: bytes
    media_type: str  # as the runtime will find it: for the user's line, not sent

    def body(self) -> dict[str, Any]:
        # The name declares its type: the runtime tells it from the bytes again.
        return {
            "request_id": self.request_id,
            "name": self.name,
            "media_type": "",
            "data": self.data,
        }


def notification_lines(data_dir: Path, after: int) -> tuple[list[Text], int]:
    """A line for each notification kept for the terminal numbered past `after`, and the
    last number. The app's words are shown as text, their control characters written out."""
    from actors.capability_gateway import read_notifications

    shown, last = read_notifications(data_dir, after)
    lines = []
    for note in shown:
        title = visible(str(note.get("title") or ""), newlines=False)
        text = visible(str(note.get("text") or ""), newlines=False)
        app = visible(str(note.get("app") or note.get("app_scope") or "?"), newlines=False)
        lines.append(
            Text.assemble("  ! ", (app, "bold"), f": {title + ' — ' if title else ''}{text}")
        )
    return lines, last


RECORDING = "recording"  # a consent card's state while its recording runs


def recording_now(view: dict[str, Any]) -> str | None:
    """The gateway's key of the recording under way in the conversation, if one is."""
    return next(
        (
            str(item["id"])
            for item in view.get("timeline", [])
            if item.get("kind") == "interaction"
            and item.get("sender") == "runtime:capabilities"
            and item.get("state") == RECORDING
        ),
        None,
    )


def recording_line() -> Text:
    """What the terminal shows while the microphone records: that it does, and how to stop."""
    return Text("  ● recording your microphone now: type /stop to end it", style="bold red")


def dismiss(
    view: dict[str, Any], conversation: str, named: str, ids: dict[str, str]
) -> dict[str, Any] | str:
    """The `dismiss` input for the open consent card (the one named `qN` when several are
    open), or what to tell the user instead."""
    cards = [w for w in view.get("pending_interactions", []) if w.get("origin") == "runtime"]
    if not cards:
        return "no permission request is waiting for an answer"
    if named:
        card = next((c for c in cards if ids.get(str(c["interaction_id"])) == named), None)
        if card is None:
            listing = ", ".join(ids.get(str(c["interaction_id"]), "q?") for c in cards)
            return f"{named} is not an open permission request; open: {listing}"
    elif len(cards) > 1:
        listing = ", ".join(ids.get(str(c["interaction_id"]), "q?") for c in cards)
        return (
            f"{len(cards)} permission requests are open; say which: /dismiss QN, one of {listing}"
        )
    else:
        card = cards[0]
    return {
        "kind": "dismiss",
        "conversation_id": conversation,
        "interaction_id": card["interaction_id"],
    }


def chooser_line(request: dict[str, Any], named: str) -> Text | None:
    """How to answer a card that asks for a file (`named`: its id, when several questions
    are open), with what the app takes; None for any other question."""
    chooser = request.get("chooser")
    if not isinstance(chooser, dict):
        return None
    wanted = file_wanted(chooser)
    takes = f"{accept_words(wanted.accept)}, up to {size_words(wanted.max_bytes)}"
    return Text(f"     /attach {named}PATH  choose the file: {takes}")


def attach_request(view: dict[str, Any], rest: str, ids: dict[str, str]) -> Attach | str:
    """`/attach [QN] PATH` for the open request that asks for a file (the one named `qN`
    when several do), or what to tell the user instead."""
    asking = [w for w in view.get("pending_interactions", []) if isinstance(w.get("chooser"), dict)]
    if not asking:
        return "no app is asking for a file"
    named, _, after = rest.partition(" ")
    card = next((c for c in asking if ids.get(str(c["interaction_id"])) == named.lower()), None)
    if card is not None:
        rest = after.strip()
    elif len(asking) > 1:
        listing = ", ".join(ids.get(str(c["interaction_id"]), "q?") for c in asking)
        return f"{len(asking)} apps ask for a file; say which: /attach QN PATH, one of {listing}"
    else:
        card = asking[0]
    if not rest:
        return "type the file's path after /attach, e.g. /attach ~/Documents/notes.txt"
    return Attach(card, rest)


def read_attachment(attaching: Attach) -> Chosen | str:
    """The file `/attach` names, read and checked for its request; or the one sentence
    that says what is wrong with it and what to do."""
    typed = visible(attaching.path, newlines=False)
    path = Path(os.path.expanduser(attaching.path))
    wanted = file_wanted(attaching.card["chooser"])
    try:
        if path.is_dir():
            return f"{typed} is a folder: give the path of a file in it"
        if not path.exists():
            return f"there is no file at {typed}: check the path (~ is your home folder)"
        if not path.is_file():
            return f"{typed} is not a regular file: give the path of a file"
        check_size(wanted, path.name, path.stat().st_size)
        with open(path, "rb") as source:
            data = source.read(wanted.max_bytes + 1)  # grown since: refused as too large
        media_type = chosen_type(wanted, path.name, "", data)
    except OSError as exc:
        return f"{typed} cannot be read ({exc.strerror or exc}): check its permissions"
    except ContractError as refused:
        return visible(refused.detail, newlines=False)
    return Chosen(str(attaching.card["interaction_id"]), path.name, data, media_type)
