"""A small PNG decoder for what Chromium and the whiteboard write (8-bit RGB or RGBA, not
interlaced): how many colours a screenshot holds, so a blank page can be told from a drawn
one, and every pixel, for a test that looks at where something was drawn."""

from __future__ import annotations

import struct
import zlib


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _decoded(png: bytes) -> tuple[int, int, int, list[bytearray]]:
    """Width, height, bytes per pixel (3 or 4) and the unfiltered rows of the image."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, data, header = 8, b"", b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, chunk = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        assert (
            zlib.crc32(kind + chunk)
            == struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])[0]
        )
        pos += 12 + length
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            data += chunk
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, "an unexpected PNG layout"
    step = 3 if colour == 2 else 4
    stride = width * step
    raw = zlib.decompress(data)
    assert len(raw) == height * (stride + 1), "the image data is not width x height"
    previous = bytearray(stride)
    rows = []
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride) if kind else ():
            left = line[i - step] if i >= step else 0
            up = previous[i]
            corner = previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                line[i] = (line[i] + _paeth(left, up, corner)) & 255
        rows.append(line)
        previous = line
    return width, height, step, rows


def distinct_colours(png: bytes) -> int:
    _, _, step, rows = _decoded(png)
    colours: set[bytes] = set()
    for line in rows[::4]:  # every fourth row, every other pixel, is plenty to count colours
        colours.update(bytes(line[i : i + 3]) for i in range(0, len(line), step * 2))
    return len(colours)


def rgb_rows(png: bytes) -> tuple[int, int, list[bytes]]:
    """The PNG's width, height and rows of RGB triples (an alpha channel dropped)."""
    width, height, step, rows = _decoded(png)
    if step == 4:
        return width, height, [bytes(b for n, b in enumerate(line) if n % 4 < 3) for line in rows]
    return width, height, [bytes(line) for line in rows]
