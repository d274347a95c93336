"""The board: its shapes' contract, the merge of an agent's patch, and what it holds.

A board is the session data of one whiteboard instance: {`title`, `shapes`: {id: shape},
`order`: [id, ...]}, drawn bottom to top in `order`. A shape is {`kind`, `colour`,
`points`, `width`?, `text`?} in board units (1000 x 700): a stroke has 2..500 points, a
line, rectangle or ellipse exactly 2 (the ends, or opposite corners), a text 1 (its top
left) and a `text` of 1..200 characters.

The surface writes the board too, and a surface is untrusted: what the app reads back is
taken shape by shape (`board_of`), and a shape that breaks the contract is left out.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Final

from contracts import Code, ContractError

WIDTH: Final = 1000
HEIGHT: Final = 700
COLOURS: Final = ("black", "red", "blue", "green", "orange", "purple")
KINDS: Final = ("stroke", "line", "rect", "ellipse", "text")
DEFAULT_WIDTH: Final = 3
MAX_SHAPES: Final = 500  # within the session data's quotas (128 KiB, 4096 keys)
MAX_TITLE: Final = 80
SHAPE_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,40}")
_POINTS: Final = {"stroke": (2, 500), "line": (2, 2), "rect": (2, 2), "ellipse": (2, 2)}
_KEYS: Final = frozenset({"kind", "colour", "points", "width", "text"})
_NAMES: Final = {"stroke": "stroke", "line": "line", "rect": "rectangle", "ellipse": "ellipse"}


def _refuse(detail: str) -> ContractError:
    return ContractError(Code.INVALID_PAYLOAD, detail[:300])


def _coordinate(value: object, top: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= top


def check_shape(shape: object, where: str = "shape") -> dict[str, Any]:
    """`shape` if it keeps the contract; else `invalid_payload` naming the rule broken."""
    if not isinstance(shape, dict):
        raise _refuse(f"{where}: a shape is an object")
    extra = sorted(set(shape) - _KEYS)
    if extra:
        raise _refuse(f"{where}: unknown field {extra[0][:40]!r}")
    kind = shape.get("kind")
    if kind not in KINDS:
        raise _refuse(f"{where}.kind: one of {', '.join(KINDS)}")
    if shape.get("colour") not in COLOURS:
        raise _refuse(f"{where}.colour: one of {', '.join(COLOURS)}")
    points = shape.get("points")
    least, most = _POINTS.get(str(kind), (1, 1))
    if not isinstance(points, list) or not least <= len(points) <= most:
        raise _refuse(f"{where}.points: {least}..{most} points for a {kind}")
    for point in points:
        if not (
            isinstance(point, list)
            and len(point) == 2
            and _coordinate(point[0], WIDTH)
            and _coordinate(point[1], HEIGHT)
        ):
            raise _refuse(f"{where}.points: each is [x, y] in 0..{WIDTH} x 0..{HEIGHT}")
    width = shape.get("width", DEFAULT_WIDTH)
    if not (_coordinate(width, 20) and width >= 1):
        raise _refuse(f"{where}.width: an integer 1..20")
    text = shape.get("text")
    if kind == "text":
        if not isinstance(text, str) or not 1 <= len(text) <= 200:
            raise _refuse(f"{where}.text: 1..200 characters")
    elif text is not None:
        raise _refuse(f"{where}.text: only a text shape has one")
    return shape


def check_title(title: object) -> str:
    if not isinstance(title, str) or not 1 <= len(title) <= MAX_TITLE:
        raise _refuse(f"title: 1..{MAX_TITLE} characters")
    return title


def empty_board(title: str) -> dict[str, Any]:
    return {"title": title, "shapes": {}, "order": []}


def board_of(data: object, default_title: str = "Whiteboard") -> dict[str, Any]:
    """The board kept in session data, each shape checked: what breaks the contract (a
    hostile surface's write) is left out, never drawn or counted."""
    raw = data if isinstance(data, dict) else {}
    title = raw.get("title")
    kept, order = raw.get("shapes"), raw.get("order")
    shapes: dict[str, Any] = kept if isinstance(kept, dict) else {}
    board = empty_board(title if isinstance(title, str) and title else default_title)
    for shape_id in order if isinstance(order, list) else []:
        if not isinstance(shape_id, str) or shape_id in board["shapes"]:
            continue
        try:
            board["shapes"][shape_id] = check_shape(shapes.get(shape_id))
        except ContractError:
            continue
        board["order"].append(shape_id)
    return board


def merge(board: dict[str, Any], patch: object) -> dict[str, Any]:
    """The board with an agent's patch {`title`?, `shapes`: {id: shape | null}} merged in:
    a new id goes on top, a known one is replaced where it lies, null removes it. The whole
    patch is checked first: one bad shape refuses all of it (`invalid_payload`)."""
    if not isinstance(patch, dict) or not set(patch) <= {"title", "shapes"}:
        raise _refuse("patch: {title?, shapes: {id: shape | null}}")
    changes = patch.get("shapes", {})
    if not isinstance(changes, dict):
        raise _refuse("patch.shapes: an object of shape ids")
    for shape_id, shape in changes.items():
        if not SHAPE_ID.fullmatch(shape_id):
            raise _refuse(f"patch.shapes: {shape_id[:40]!r} is not a shape id")
        if shape is not None:
            check_shape(shape, f"patch.shapes.{shape_id}")
    title = check_title(patch["title"]) if "title" in patch else board["title"]
    shapes: dict[str, Any] = dict(board["shapes"])
    order: list[str] = list(board["order"])
    for shape_id, shape in changes.items():
        if shape is None:
            shapes.pop(shape_id, None)
            if shape_id in order:
                order.remove(shape_id)
            continue
        if shape_id not in shapes:
            order.append(shape_id)
        shapes[shape_id] = shape
    if len(order) > MAX_SHAPES:
        raise ContractError(Code.TOO_LARGE, f"a board holds at most {MAX_SHAPES} shapes")
    return {"title": title, "shapes": shapes, "order": order}


def shapes_in_order(board: dict[str, Any]) -> list[dict[str, Any]]:
    return [board["shapes"][shape_id] for shape_id in board["order"]]


def _description(title: str, kinds: Counter[str], texts: list[str]) -> str:
    if not kinds:
        return f"The board {title!r} is empty."
    parts = []
    for kind in KINDS:
        if kinds[kind]:
            noun = _NAMES.get(kind, "text")
            parts.append(f"{kinds[kind]} {noun}{'s' if kinds[kind] != 1 else ''}")
    held = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    said = f", reading {', '.join(repr(t) for t in texts[:5])}" if texts else ""
    return f"The board {title!r} holds {held}{said}."


def summary(board: dict[str, Any], revision: int) -> dict[str, Any]:
    """What the board holds, for an agent that cannot see it."""
    shapes = shapes_in_order(board)
    kinds = Counter(str(shape["kind"]) for shape in shapes)
    texts = [str(shape["text"]) for shape in shapes if shape["kind"] == "text"]
    return {
        "title": board["title"],
        "revision": revision,
        "shape_count": len(shapes),
        "kinds": dict(sorted(kinds.items())),
        "texts": texts,
        "description": _description(board["title"], kinds, texts),
    }
