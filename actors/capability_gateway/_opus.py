"""Opus packets to 16-bit PCM with the system's libopus (`libopus.so.0`, which a browser
and a sound server bring along), through ctypes: what turns a page's WebM recording into
samples a recogniser or a test can read, without a second media stack.

`decoder_available()` says whether the library is there; `decode(packets, rate)` decodes
each packet in order at `rate` (8, 12, 16, 24 or 48 kHz: Opus resamples itself) to mono
samples, little-endian 16-bit. A packet the library refuses stops the decoding with
`AudioError`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Iterable
from functools import cache
from typing import Final

from ._audio import AudioError

MAX_FRAME_MS: Final = 120  # the longest packet Opus has
RATES: Final = frozenset({8_000, 12_000, 16_000, 24_000, 48_000})


@cache
def _library() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("opus") or "libopus.so.0"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    lib.opus_decoder_create.restype = ctypes.c_void_p
    lib.opus_decoder_create.argtypes = [ctypes.c_int32, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.opus_decode.restype = ctypes.c_int
    lib.opus_decode.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int32,
        ctypes.POINTER(ctypes.c_int16),
        ctypes.c_int,
        ctypes.c_int,
    ]
    lib.opus_decoder_destroy.restype = None
    lib.opus_decoder_destroy.argtypes = [ctypes.c_void_p]
    return lib


def decoder_available() -> bool:
    return _library() is not None


def decode(packets: Iterable[bytes], rate: int = 16_000) -> bytes:
    """The packets' mono samples at `rate`, as 16-bit little-endian PCM."""
    lib = _library()
    if lib is None:
        raise AudioError("this host has no Opus decoder (libopus)")
    if rate not in RATES:
        raise ValueError(f"Opus decodes at {sorted(RATES)} Hz, not {rate}")
    error = ctypes.c_int(0)
    decoder = lib.opus_decoder_create(rate, 1, ctypes.byref(error))
    if not decoder or error.value != 0:
        raise AudioError("the Opus decoder could not be made")
    frame = rate * MAX_FRAME_MS // 1000
    buffer = (ctypes.c_int16 * frame)()
    out = bytearray()
    try:
        for packet in packets:
            count = lib.opus_decode(decoder, packet, len(packet), buffer, frame, 0)
            if count < 0:
                raise AudioError("the recording holds a packet Opus cannot decode")
            out += bytes(memoryview(buffer).cast("B")[: count * 2])
    finally:
        lib.opus_decoder_destroy(decoder)
    return bytes(out)
