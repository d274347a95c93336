"""What leaves the web host for the page, and what a page's frame becomes: the agent's
Markdown as a tree of allowed tags only, timeline items with every untrusted string made
visible (a consent card and a tool call included), and actions whose conversation is the
page's, never the frame's; a save names an artifact by its id only; a preview is a picture
by its bytes only, and a saved file's name leaves as a header that cannot be broken out of."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.kernel import new_id
from actors.web_host import _inputs
from actors.web_host._artifacts import artifact_if_readable, content_disposition, sniff_image
from actors.web_host._markdown import TAGS, markdown_tree
from actors.web_host._views import display_item


def _tags(nodes: list[Any]) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, list):
            found.add(node[0])
            found |= _tags(node[1])
    return found


def _text(nodes: list[Any]) -> str:
    return "".join(n if isinstance(n, str) else _text(n[1]) for n in nodes)


def test_markdown_leaves_as_allowed_tags_with_untrusted_text_as_text() -> None:
    tree = markdown_tree(
        "# Title\n\n<script>alert(1)</script> <b>b</b> ![pic](http://x/p.png)\n\n"
        "[ok](https://a.example/) [js](javascript:alert(1)) [ftp](ftp://f.example/x)\n\n"
        "\x1b[31mred\u202eevil\n\n```\n<i>code</i>\n```"
    )
    assert _tags(tree) <= TAGS and "script" not in _tags(tree)
    text = _text(tree)
    assert "<script>alert(1)</script> <b>b</b>" in text
    assert "pic (http://x/p.png)" in text
    assert "[js](javascript:alert(1))" in text and "ftp (ftp://f.example/x)" in text
    assert "\\x1b[31mred<U+202E>evil" in text
    assert "<i>code</i>" in text
    links = [n for n in tree[2][1] if isinstance(n, list) and n[0] == "a"]
    assert links == [["a", ["ok"], "https://a.example/"]]


def test_a_consent_card_and_a_tool_call_are_shown_with_their_strings_visible() -> None:
    card = {
        "id": "req-1",
        "sender": "runtime:capabilities",
        "kind": "interaction",
        "text": "keeper asks to save a file on your computer: \u202ekeep",
        "format": "plain",
        "state": "waiting",
        "interaction": {
            "interaction_id": "req-1",
            "kind": "choice",
            "origin": "runtime",
            "options": [{"id": "once", "label": "Allow once"}, {"id": "deny", "label": "De\x07ny"}],
        },
    }
    shown = display_item(card, 3, {"req-1"})
    assert shown["text"] == "keeper asks to save a file on your computer: <U+202E>keep"
    assert shown["ask"] == {
        "kind": "choice",
        "origin": "runtime",
        "interaction_id": "req-1",
        "open": True,
        "options": [{"id": "once", "label": "Allow once"}, {"id": "deny", "label": "De\\x07ny"}],
    }
    assert display_item(card, 3, set())["ask"]["open"] is False
    tool = {
        "id": "call-1",
        "sender": "runtime:tools",
        "kind": "tool",
        "text": "pomodoro · start",
        "state": "succeeded",
        "percent": 100,
        "message": "done\x1b[2J",
        "artifact": {"artifact_id": "a1", "title": "Log\u202e", "media_type": "text/plain",
                     "size": 3},
    }  # fmt: skip
    shown = display_item(tool, 4, set())
    assert (shown["state"], shown["percent"], shown["detail"]) == ("succeeded", 100, "done\\x1b[2J")
    assert shown["artifact"] == {
        "id": "a1",
        "label": "artifact “Log<U+202E>” (text/plain, 3 bytes)",
        "title": "Log<U+202E>",
        "media_type": "text/plain",
    }


def _act(app: str, given: dict[str, Any]) -> dict[str, Any]:
    return {"t": "act", "client_id": new_id(), "app": app, "input": given}


@pytest.mark.parametrize(
    ("app", "given", "body"),
    [
        ("chat", {"kind": "send", "text": "hi"}, {"kind": "send", "text": "hi"}),
        (
            "chat",
            {"kind": "answer", "interaction_id": "q", "selected": ["a"]},
            {"kind": "answer", "interaction_id": "q", "selected": ["a"]},
        ),
        ("chat", {"kind": "stop", "call_id": "c1"}, {"kind": "stop", "call_id": "c1"}),
        (
            "chat",
            {"kind": "dismiss", "interaction_id": "r"},
            {"kind": "dismiss", "interaction_id": "r"},
        ),
    ],
)
def test_a_chat_action_is_in_the_pages_conversation(
    app: str, given: dict[str, Any], body: dict[str, Any]
) -> None:
    action = _inputs.action(_act(app, given), "conv-9")
    assert action.message_type == "host.ui.action"
    assert action.body == {"app_scope": "chat", "input": {**body, "conversation_id": "conv-9"}}


def test_a_registry_action_and_an_intent_are_what_the_page_may_ask() -> None:
    remove = _act("app-registry", {"kind": "remove", "app_scope": "notes", "confirmed": True})
    assert _inputs.action(remove, "c").body == {
        "app_scope": "app-registry",
        "input": {"kind": "remove", "app_scope": "notes", "confirmed": True},
    }
    intent = {"t": "intent", "client_id": new_id(), "intent": "focus_app", "app_scope": "chat"}
    assert _inputs.action(intent, "c").message_type == "host.intent"
    with pytest.raises(_inputs.Refused, match="confirmation"):
        _inputs.action(
            _act("app-registry", {"kind": "remove", "app_scope": "n", "confirmed": 1}), "c"
        )


def test_a_page_says_only_which_notification_it_showed_and_how() -> None:
    assert _inputs.notified({"t": "notified", "id": "canvas/n-1", "as": "toast"}) == (
        "canvas/n-1",
        "toast",
    )
    for frame, sentence in (
        ({"t": "notified", "id": "canvas/n-1", "as": "sound"}, "in a way it cannot"),
        ({"t": "notified", "id": "x" * 161, "as": "system"}, "bad notification id"),
        ({"t": "notified", "id": "canvas/n-1"}, "incomplete"),
        ({"t": "notified", "id": "c", "as": "system", "app": "x"}, "unknown field"),
    ):
        with pytest.raises(_inputs.Refused, match=sentence):
            _inputs.notified(frame)


def test_a_save_names_an_artifact_by_its_id_only() -> None:
    artifact_id = "art_" + "A1" * 13
    frame = {"t": "save", "client_id": new_id(), "artifact_id": artifact_id}
    assert _inputs.save(frame).artifact_id == artifact_id
    for named in ("../../runtime.db", "art_short", f"{artifact_id}/x", 7):
        with pytest.raises(_inputs.Refused, match="not there"):
            _inputs.save({**frame, "artifact_id": named})
    with pytest.raises(_inputs.Refused, match="unknown field"):
        _inputs.save({**frame, "path": "/etc/passwd"})


def test_a_preview_is_a_picture_by_its_bytes() -> None:
    assert sniff_image(b"\x89PNG\r\n\x1a\n....") == "image/png"
    assert sniff_image(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert sniff_image(b"GIF89a..") == "image/gif"
    assert sniff_image(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    for other in (b"<svg xmlns='http://www.w3.org/2000/svg'/>", b"<html><script>", b"", b"RIFF"):
        assert sniff_image(other) is None


def test_an_artifact_whose_store_file_cannot_be_read_is_not_there(tmp_path: Path) -> None:
    """The page is told the file is not here (a 404 with its sentence), never given an
    error page, when the store's file cannot be read."""
    (tmp_path / "runtime.db").write_bytes(b"not a database, " * 64)
    assert artifact_if_readable(tmp_path, "art_" + new_id()) is None


def test_a_saved_name_leaves_as_one_safe_header_value() -> None:
    header = content_disposition('Plan "B"; filename=evil.html\\é.png')
    plain, encoded = header.removeprefix("attachment; ").split("; filename*=")
    assert plain == 'filename="Plan _B_; filename=evil.html__.png"'
    assert encoded == "UTF-8''Plan%20%22B%22%3B%20filename%3Devil.html%5C%C3%A9.png"
    assert header.isascii() and "\r" not in header and "\n" not in header
