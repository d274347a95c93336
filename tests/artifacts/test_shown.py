"""How the chat shows an artifact a tool call handed the agent: the view keeps the
reference and nothing else the event carried, and the terminal chat and the history print
its title (written out safely), media type and size."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from apps.chat import artifact_label
from apps.sdk import ViewModel
from lineup.terminal_chat import render_new

REFERENCE = {"artifact_id": "art_" + "A" * 26, "title": "Notes", "media_type": "text/plain",
             "size": 5000}  # fmt: skip


def _step(state: str, **facts: Any) -> dict[str, Any]:
    body = {"call_id": "call_1", "conversation_id": "c", "app_scope": "toolbox",
            "method": "box.artifact", "state": state, **facts}  # fmt: skip
    return {"kind": "tool", "conversation_id": "c", "body": body}


def test_the_timeline_keeps_the_reference_and_nothing_else() -> None:
    views = ViewModel()
    views.apply(_step("accepted"))
    view = views.apply(_step("succeeded", artifact={**REFERENCE, "path": "/data/artifacts/x"}))
    (item,) = view.timeline
    assert item["artifact"] == REFERENCE and item["state"] == "succeeded"


def test_the_terminal_chat_shows_it_when_the_call_succeeds() -> None:
    views = ViewModel()
    seen: dict[str, str] = {}
    view = views.apply(_step("accepted"))
    assert "bytes)" not in "".join(_plain(render_new(view.to_dict(), seen)))
    view = views.apply(_step("succeeded", artifact=REFERENCE))
    shown = _plain(render_new(view.to_dict(), seen))
    assert "  ↳ artifact “Notes” (text/plain, 5,000 bytes)" in shown
    assert f"    save it: lineup artifacts save {REFERENCE['artifact_id']}" in shown


def test_a_title_is_written_out_not_obeyed() -> None:
    label = artifact_label({**REFERENCE, "title": "a\x1b[31mred\u202e"})
    assert "\x1b" not in label and "\u202e" not in label
    assert label.startswith("artifact “a") and label.endswith("(text/plain, 5,000 bytes)")


def _plain(lines: list[Any]) -> list[str]:
    return [line.plain for line in lines if isinstance(line, Text)]
