"""The message every path of the bench carries, and the small helpers all its processes share.

The hardware's reference figures were measured with a 208-byte msgpack envelope (`id`,
`type`, `scope`, `payload`, `ts`) framed as a 4-byte length + body. Every path here carries
that same envelope so the figures compare the paths, not the payloads: the bare paths send
it as the frame itself, the kernel path sends it as the `body` of a kernel message (the
kernel adds its own routing fields around it, which is part of what it costs).
"""

from __future__ import annotations

import ctypes
import math
import os
import signal
import struct
import sys
import time
from collections.abc import Sequence
from typing import Any

import msgpack

from actors.kernel import new_id

HEADER = struct.Struct(">I")
ENVELOPE_BYTES = 208

_packb = msgpack.Packer(use_bin_type=True).pack
_TEXT = "x" * 60  # with a uint32 `seq`, sized so the packed envelope is ENVELOPE_BYTES long


def envelope(seq: int, ts_ns: int | None = None) -> dict[str, Any]:
    """One envelope; `ts` (ns since the epoch, `time.time_ns()`) is read across processes."""
    return {
        "id": new_id(),
        "type": "app.event",
        "scope": "app:bench.sample/session-0001",
        "payload": {
            "seq": 1_000_000 + seq,
            "kind": "tick",
            "text": _TEXT,
            "tags": ["bench", "kernel"],
        },
        "ts": time.time_ns() if ts_ns is None else ts_ns,
    }


def frame(value: dict[str, Any]) -> bytes:
    body: bytes = _packb(value)
    return HEADER.pack(len(body)) + body


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def die_with_parent(parent_pid: int, sig: signal.Signals = signal.SIGKILL) -> None:
    """Tie this process's life to the bench's: no helper outlives a killed bench."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(0)
