"""The terminal chat's part: an app's notification is shown once, as text, with the bell;
`/dismiss` closes a consent card (a question the runtime asked) without deciding, and
answers nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lineup._capability_lines import notification_lines
from lineup.terminal_chat import parse_line

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


def test_each_notification_is_shown_once_as_text(tmp_path: Path) -> None:
    notes = tmp_path / "notifications.jsonl"
    first = {"app_scope": "keeper", "title": "Tea", "text": "ready \x1b[31mnow"}
    notes.write_text(json.dumps(first) + "\n" + '{"app_scope": "keeper", "te')  # half a line
    lines, offset = notification_lines(tmp_path, 0)
    assert [line.plain for line in lines] == ["  ! keeper: Tea — ready \\x1b[31mnow"]
    assert notification_lines(tmp_path, offset) == ([], offset)  # the half line waits
    with notes.open("a") as out:
        out.write('xt": "second"}\n')
    lines, _ = notification_lines(tmp_path, offset)
    assert [line.plain for line in lines] == ["  ! keeper: second"]
