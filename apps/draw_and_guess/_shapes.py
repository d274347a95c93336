"""The shapes of a drawing, as JSON Schemas: what the agent draws and what the user drew.

The board is 1000 x 700 units. A shape is {`kind`, `colour`, `points`, `width`?, `text`?}:
a stroke has 2 to 500 points, a line, rectangle or ellipse exactly 2 (the ends, or opposite
corners), a text exactly 1 (where it starts) and its `text`.
"""

from __future__ import annotations

from typing import Any, Final

BOARD_WIDTH: Final = 1000
BOARD_HEIGHT: Final = 700
COLOURS: Final = ("black", "red", "blue", "green", "orange", "purple")
DEFAULT_WIDTH: Final = 3
MAX_STROKE_POINTS: Final = 500

POINT: Final[dict[str, Any]] = {
    "type": "array",
    "prefixItems": [
        {"type": "integer", "minimum": 0, "maximum": BOARD_WIDTH},
        {"type": "integer", "minimum": 0, "maximum": BOARD_HEIGHT},
    ],
    "items": False,
    "minItems": 2,
}


def _points(least: int, most: int) -> dict[str, Any]:
    return {"type": "array", "items": POINT, "minItems": least, "maxItems": most}


def _kind(kinds: list[str], points: dict[str, Any], *, text: bool = False) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "kind": {"enum": kinds},
        "colour": {"enum": list(COLOURS)},
        "points": points,
        "width": {"type": "integer", "minimum": 1, "maximum": 20},
    }
    required = ["kind", "colour", "points"]
    if text:
        properties["text"] = {"type": "string", "minLength": 1, "maxLength": 200}
        required.append("text")
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


SHAPE: Final[dict[str, Any]] = {
    "oneOf": [
        _kind(["stroke"], _points(2, MAX_STROKE_POINTS)),
        _kind(["line", "rect", "ellipse"], _points(2, 2)),
        _kind(["text"], _points(1, 1), text=True),
    ]
}


def on_board(x: int, y: int) -> list[int]:
    """A point the user drew, held to the board: one past its edge is drawn at the edge."""
    return [min(max(x, 0), BOARD_WIDTH), min(max(y, 0), BOARD_HEIGHT)]


def stroke(points: list[list[int]], colour: str) -> dict[str, Any]:
    """The user's stroke as a shape (a single point is a dot: the point twice)."""
    held = [on_board(x, y) for x, y in points[:MAX_STROKE_POINTS]]
    if len(held) == 1:
        held.append(list(held[0]))
    return {"kind": "stroke", "colour": colour, "points": held, "width": DEFAULT_WIDTH}
