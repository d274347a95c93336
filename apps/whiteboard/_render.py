"""The board drawn as a PNG and as an SVG, in the app's process, from its shapes alone.

The PNG is 1000 x 700 pixels, one per board unit, 8-bit RGB on white, written with zlib and
struct: each segment of a stroke, line, rectangle or ellipse is a run of round pens of the
shape's width. A text is drawn as the outline of the box its characters fill (a raster
font is not worth its size here); the SVG has the text itself, escaped.
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from typing import Any, Final
from xml.sax.saxutils import escape

from ._board import DEFAULT_WIDTH, HEIGHT, WIDTH

RGB: Final = {
    "black": (0x22, 0x22, 0x22),
    "red": (0xD6, 0x27, 0x28),
    "blue": (0x1F, 0x77, 0xB4),
    "green": (0x2C, 0xA0, 0x2C),
    "orange": (0xFF, 0x7F, 0x0E),
    "purple": (0x94, 0x67, 0xBD),
}
BACKGROUND: Final = (0xFF, 0xFF, 0xFF)
TEXT_SIZE: Final = 22  # board units: the height of a text, its characters 0.55 as wide
ELLIPSE_STEPS: Final = 96

Point = tuple[int, int]


def text_box(shape: dict[str, Any]) -> tuple[Point, Point]:
    """The corners of the box a text fills, clipped to the board."""
    x, y = shape["points"][0]
    right = min(WIDTH, x + max(1, round(len(shape["text"]) * TEXT_SIZE * 0.55)))
    return (x, y), (right, min(HEIGHT, y + TEXT_SIZE))


def outline(shape: dict[str, Any]) -> list[Point]:
    """The polyline a shape is drawn along (closed shapes end where they start)."""
    kind = shape["kind"]
    points = [(int(x), int(y)) for x, y in shape["points"]]
    if kind == "text":
        points = list(text_box(shape))
        kind = "rect"
    if kind == "rect":
        (x0, y0), (x1, y1) = points
        return [(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)]
    if kind == "ellipse":
        (x0, y0), (x1, y1) = points
        cx, cy, rx, ry = (x0 + x1) / 2, (y0 + y1) / 2, abs(x1 - x0) / 2, abs(y1 - y0) / 2
        return [
            (
                round(cx + rx * math.cos(2 * math.pi * n / ELLIPSE_STEPS)),
                round(cy + ry * math.sin(2 * math.pi * n / ELLIPSE_STEPS)),
            )
            for n in range(ELLIPSE_STEPS + 1)
        ]
    return points


class _Raster:
    def __init__(self) -> None:
        self.pixels = bytearray(bytes(BACKGROUND) * (WIDTH * HEIGHT))

    def pen(self, x: int, y: int, radius: int, colour: bytes) -> None:
        """A round pen's mark: one slice per row of the disc."""
        for dy in range(-radius, radius + 1):
            row = y + dy
            if not 0 <= row < HEIGHT:
                continue
            half = math.isqrt(radius * radius - dy * dy)
            left, right = max(0, x - half), min(WIDTH - 1, x + half)
            if left <= right:
                start = (row * WIDTH + left) * 3
                self.pixels[start : start + (right - left + 1) * 3] = colour * (right - left + 1)

    def segment(self, a: Point, b: Point, radius: int, colour: bytes) -> None:
        # Pens half their radius apart leave no gap a viewer sees, at a quarter of the work
        # of one pen per pixel for a wide line.
        spacing = max(1, radius // 2)
        steps = max(1, math.ceil(max(abs(b[0] - a[0]), abs(b[1] - a[1])) / spacing))
        for n in range(steps + 1):
            x = a[0] + (b[0] - a[0]) * n / steps
            y = a[1] + (b[1] - a[1]) * n / steps
            self.pen(round(x), round(y), radius, colour)

    def png(self) -> bytes:
        stride = WIDTH * 3
        rows = b"".join(
            b"\x00" + self.pixels[row * stride : (row + 1) * stride] for row in range(HEIGHT)
        )

        def chunk(kind: bytes, body: bytes) -> bytes:
            crc = zlib.crc32(kind + body) & 0xFFFFFFFF
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

        header = struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9))
            + chunk(b"IEND", b"")
        )


def render_png(shapes: list[dict[str, Any]]) -> bytes:
    raster = _Raster()
    for shape in shapes:
        colour = bytes(RGB[shape["colour"]])
        radius = max(0, (int(shape.get("width", DEFAULT_WIDTH)) - 1) // 2)
        line = outline(shape)
        for a, b in itertools.pairwise(line):
            raster.segment(a, b, radius, colour)
    return raster.png()


def _svg_shape(shape: dict[str, Any]) -> str:
    colour = "#{:02x}{:02x}{:02x}".format(*RGB[shape["colour"]])
    width = int(shape.get("width", DEFAULT_WIDTH))
    paint = f'fill="none" stroke="{colour}" stroke-width="{width}" stroke-linecap="round"'
    kind, points = shape["kind"], shape["points"]
    if kind == "text":
        x, y = points[0]
        body = escape(shape["text"])
        return (
            f'<text x="{x}" y="{y + TEXT_SIZE - 4}" fill="{colour}" font-size="{TEXT_SIZE}"'
            f' font-family="sans-serif">{body}</text>'
        )
    if kind == "stroke":
        joined = " ".join(f"{x},{y}" for x, y in points)
        return f'<polyline points="{joined}" {paint} stroke-linejoin="round"/>'
    (x0, y0), (x1, y1) = points
    if kind == "line":
        return f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" {paint}/>'
    if kind == "rect":
        box = f'x="{min(x0, x1)}" y="{min(y0, y1)}" width="{abs(x1 - x0)}" height="{abs(y1 - y0)}"'
        return f"<rect {box} {paint}/>"
    return (
        f'<ellipse cx="{(x0 + x1) / 2:g}" cy="{(y0 + y1) / 2:g}" rx="{abs(x1 - x0) / 2:g}"'
        f' ry="{abs(y1 - y0) / 2:g}" {paint}/>'
    )


def render_svg(title: str, shapes: list[dict[str, Any]]) -> bytes:
    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}"'
        f' viewBox="0 0 {WIDTH} {HEIGHT}">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        *(_svg_shape(shape) for shape in shapes),
        "</svg>",
    ]
    return ("\n".join(lines) + "\n").encode()
