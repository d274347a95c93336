"""What the terminal chat shows and sends for the capability gateway: the apps'
notifications (with the bell), and `/dismiss` of a consent card (a question the runtime
asked, `origin: runtime`, which the user may close without deciding)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text

from apps.chat import visible


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
