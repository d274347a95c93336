"""Safe text for the terminal: untrusted text is shown, never interpreted.

Agent and app text is untrusted. Raw HTML is never interpreted: tags are shown as the text
they are. A link is rewritten to its label followed by its address, so the user sees where
it points and nothing is clickable (`hyperlinks=False`: no OSC 8 escape reaches the
terminal). Control characters other than newline and tab, and the invisible formatting
characters (bidi overrides and isolates, zero-width marks, line separators), are shown
visibly instead (`\\x1b`, `<U+202E>`), so an agent can neither move the cursor, retitle the
window, nor make text read other than it is. `visible` does that for any string; `Text`
objects made from it (`text`) carry no console markup, so `[bold]` prints as typed.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Final

from rich.text import Text

if TYPE_CHECKING:
    from rich.markdown import Markdown

_LINK: Final = re.compile(r"!?\[([^\]\n]*)\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
_AUTOLINK: Final = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
# Zero-width joiner stays: emoji sequences need it and it moves nothing.
_KEPT: Final = frozenset("\n\t\u200d")


_ASCII_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _shown(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"<U+{code:04X}>"


def visible(text: object, *, newlines: bool = True) -> str:
    """`text` with every control and invisible formatting character written out visibly
    (newlines kept unless `newlines` is false, then shown as `\\n`)."""
    value = str(text)
    if value.isascii():
        shown = _ASCII_CONTROL.sub(lambda m: _shown(m.group()), value)
    else:
        shown = "".join(
            _shown(char)
            if char not in _KEPT and unicodedata.category(char) in _HIDDEN_CATEGORIES
            else char
            for char in value
        )
    return shown if newlines else shown.replace("\n", "\\n")


def text(value: object, style: str = "", *, newlines: bool = True) -> Text:
    """A rich `Text` of untrusted `value`: shown as typed, no markup, controls visible."""
    return Text(visible(value, newlines=newlines), style=style)


def safe_markdown_source(text: str) -> str:
    """`text` with links written out, HTML neutralised and controls visible, still Markdown."""
    text = visible(text)
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})" if m.group(2) else m.group(1), text)
    text = _AUTOLINK.sub(r"\1", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def render(text: str, format: str = "markdown") -> Markdown | Text:
    """A renderable for rich: Markdown made safe, or the plain text shown as typed."""
    if format != "markdown":
        return Text(visible(text))
    # Only the terminal chat renders Markdown: the chat app's process never loads it.
    from rich.markdown import Markdown  # noqa: PLC0415 - loaded where it is used

    return Markdown(safe_markdown_source(text), hyperlinks=False)


def plain(text: str, format: str = "markdown") -> str:
    """What the user reads, as plain text (links written out, controls visible)."""
    shown = visible(text)
    if format != "markdown":
        return shown
    shown = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})" if m.group(2) else m.group(1), shown)
    return _AUTOLINK.sub(r"\1", shown)
