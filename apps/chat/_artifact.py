"""How the chat shows an artifact a tool call handed the agent: its title, media type and
size, written out safely (a title is the app's text), never a path."""

from __future__ import annotations

from typing import Any

from ._markdown import visible


def artifact_label(reference: dict[str, Any]) -> str:
    """`artifact “Title” (image/png, 1,234 bytes)` for a reference {artifact_id, title,
    media_type, size}."""
    title = visible(reference.get("title", ""), newlines=False)
    media_type = visible(reference.get("media_type", "?"), newlines=False)
    size = reference.get("size")
    bytes_ = f"{size:,} bytes" if isinstance(size, int) else "? bytes"
    return f"artifact “{title}” ({media_type}, {bytes_})"
