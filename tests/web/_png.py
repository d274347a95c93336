"""How many colours a PNG screenshot holds: a small decoder for what Chromium writes
(8-bit RGB or RGBA, not interlaced), so a blank page can be told from a drawn one."""

from __future__ import annotations

import struct
import zlib


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def distinct_colours(png: bytes) -> int:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, data, header = 8, b"", b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, chunk = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
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
    previous = bytearray(stride)
    colours: set[bytes] = set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
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
        if row % 4 == 0:  # every fourth row is plenty to count colours
            colours.update(bytes(line[i : i + 3]) for i in range(0, stride, step * 2))
        previous = line
    return len(colours)


def rgb_rows(png: bytes) -> tuple[int, int, list[bytes]]:
    """The PNG's width, height and rows of RGB triples (an alpha channel dropped): every
    pixel, for a test that looks at where something was drawn."""
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
        rows.append(
            bytes(b for n, b in enumerate(line) if n % step < 3) if step == 4 else bytes(line)
        )
        previous = line
    return width, height, rows
