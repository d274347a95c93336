"""The chat core app (`app.chat`): the user's conversation with the agent.

`_app` is the app; `_markdown` the safe rendering. `history` is what `lineup chat history`
prints: the timeline as the user sees it, read from the app's own log.
"""

from pathlib import Path
from typing import Any

from apps.sdk import read_view

from ._app import ChatApp
from ._markdown import plain, render, safe_markdown_source


def app_dir(data_dir: str | Path) -> Path:
    """Where the runtime keeps the chat app's private files."""
    return Path(data_dir) / "apps" / "chat"


def history(data_dir: str | Path, conversation_id: str) -> dict[str, Any]:
    """The chat view of `conversation_id`: each timeline item with its message id, sender,
    text (as shown: links written out, no HTML) and state."""
    view = read_view(app_dir(data_dir), conversation_id)
    timeline: list[dict[str, Any]] = view["timeline"]
    for item in timeline:
        item["shown"] = plain(item.get("text", ""), item.get("format", "plain"))
    return view


__all__ = ["ChatApp", "app_dir", "history", "plain", "render", "safe_markdown_source"]
