"""Safe Markdown for the terminal: no raw HTML, links shown, not followed.

Agent text is untrusted. Raw HTML is never interpreted: tags are shown as the text they
are. A link is rewritten to its label followed by its address, so the user sees where it
points and nothing is clickable (`hyperlinks=False`: no OSC 8 escape reaches the terminal).
Control characters other than newline and tab are dropped, so an agent cannot move the
cursor or retitle the window.
"""

from __future__ import annotations

import re
from typing import Final

from rich.markdown import Markdown

_LINK: Final = re.compile(r"!?\[([^\]\n]*)\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
_AUTOLINK: Final = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def safe_markdown_source(text: str) -> str:
    """`text` with links written out and HTML neutralised, still Markdown."""
    text = _CONTROL.sub("", text)
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})" if m.group(2) else m.group(1), text)
    text = _AUTOLINK.sub(r"\1", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def render(text: str, format: str = "markdown") -> Markdown | str:
    """A renderable for rich: Markdown made safe, or the plain text without controls."""
    if format != "markdown":
        return _CONTROL.sub("", text)
    return Markdown(safe_markdown_source(text), hyperlinks=False)


def plain(text: str, format: str = "markdown") -> str:
    """What the user reads, as plain text (for `lineup chat history`)."""
    if format != "markdown":
        return _CONTROL.sub("", text)
    return safe_markdown_source(text).replace("&lt;", "<").replace("&gt;", ">")
