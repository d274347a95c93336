"""What the chat says aloud of an agent's message: the words a person reads, in parts short
enough for one piece of speech each.

Markdown is read as its words: a link by its label (its address is for the eye), emphasis,
headings, quotes and list marks left out, code as it is written. A UTC timestamp is said on
the local clock, as the page shows it. Controls and invisible formatting characters are not
said. The text is cut into parts of at most `PART_CHARS` characters, at a sentence's end
where one falls within, else at a comma, else at a space: the host's speech engine makes at
most six seconds at a time, about 90 characters of its speech, so a part stays under that.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from ._times import local_times

PART_CHARS: Final = 80
_LINK: Final = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_AUTOLINK: Final = re.compile(r"<(?:https?|mailto):[^>\s]+>")
_MARKS: Final = re.compile(r"(?m)^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+|\d{1,3}[.)]\s+)")
_EMPHASIS: Final = re.compile(r"(\*\*|__|\*|_|~~|`)")
_SAID: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_ENDS: Final = (". ", "! ", "? ", "; ", ": ")


def words_of(text: str, format: str = "markdown") -> str:
    """`text` as it is said: one line of words."""
    said = local_times(text)
    if format == "markdown":
        said = _LINK.sub(lambda found: found.group(1), said)
        said = _AUTOLINK.sub("", said)
        said = _MARKS.sub("", said)
        said = _EMPHASIS.sub("", said)
    said = "".join(" " if unicodedata.category(c) in _SAID else c for c in said)
    return " ".join(said.split())


def spoken_parts(text: str, format: str = "markdown") -> list[str]:
    """The parts `text` is said in, in order, each at most `PART_CHARS` characters."""
    rest = words_of(text, format)
    parts: list[str] = []
    while len(rest) > PART_CHARS:
        window = rest[: PART_CHARS + 1]
        cut = max(window.rfind(end) for end in _ENDS)
        if cut < PART_CHARS // 3:
            cut = window.rfind(", ")
        if cut < PART_CHARS // 3:
            cut = window.rfind(" ")
        cut = cut + 1 if cut > 0 else PART_CHARS  # one word longer than a part is cut
        parts.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        parts.append(rest)
    return parts
