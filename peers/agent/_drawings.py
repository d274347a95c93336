"""The demo agent's drawings: a few fixed shapes per subject, on the 1000 x 700 board the
whiteboard and draw-and-guess apps share (`{kind, colour, points, width?, text?}`).

A subject names one of the known pictures when one of its words is a picture's name ("a
big house" is a house); anything else is a labelled frame with the subject as its text.
The same subject always gives the same shapes, so a re-sent drawing is the same drawing.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final

Shape = dict[str, Any]


def _shape(kind: str, colour: str, *points: tuple[int, int], **extra: Any) -> Shape:
    return {"kind": kind, "colour": colour, "points": [list(p) for p in points], **extra}


_HOUSE: Final = (
    _shape("rect", "black", (300, 300), (700, 600)),
    _shape("line", "red", (280, 300), (500, 130), width=6),
    _shape("line", "red", (500, 130), (720, 300), width=6),
    _shape("rect", "orange", (460, 450), (540, 600)),
    _shape("rect", "blue", (340, 360), (420, 430)),
    _shape("rect", "blue", (580, 360), (660, 430)),
)
_SUN: Final = (
    _shape("ellipse", "orange", (400, 250), (600, 450), width=6),
    *(
        _shape("line", "orange", (500 + dx * 130, 350 + dy * 130), (500 + dx * 210, 350 + dy * 210))
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
    ),
)
_TREE: Final = (
    _shape("rect", "orange", (470, 420), (530, 640)),
    _shape("ellipse", "green", (350, 120), (650, 440), width=8),
)
_CAT: Final = (
    _shape("ellipse", "black", (380, 260), (620, 480)),
    _shape("stroke", "black", (400, 300), (420, 180), (480, 265)),
    _shape("stroke", "black", (520, 265), (580, 180), (600, 300)),
    _shape("ellipse", "green", (440, 330), (480, 370)),
    _shape("ellipse", "green", (520, 330), (560, 370)),
    _shape("line", "black", (380, 410), (470, 400)),
    _shape("line", "black", (530, 400), (620, 410)),
)
PICTURES: Final[dict[str, tuple[Shape, ...]]] = {
    "house": _HOUSE,
    "sun": _SUN,
    "tree": _TREE,
    "cat": _CAT,
}
# The words of a round the user guesses: the pictures the agent knows how to draw.
WORDS: Final = tuple(PICTURES)


def drawing(subject: str) -> list[Shape]:
    """The shapes of `subject`: a known picture, or a frame labelled with the subject."""
    for word in re.findall(r"[a-z]+", subject.lower()):
        if word in PICTURES:
            return [dict(shape) for shape in PICTURES[word]]
    label = subject.strip()[:200] or "?"
    return [
        _shape("rect", "black", (100, 100), (900, 600)),
        _shape("text", "purple", (140, 360), text=label),
    ]


def word_for(trigger: str) -> str:
    """The word of a round, picked by the message that asked for it: the same message picks
    the same word after a restart, different messages go round the list."""
    digest = hashlib.blake2b(trigger.encode(), digest_size=4).digest()
    return WORDS[int.from_bytes(digest, "big") % len(WORDS)]
