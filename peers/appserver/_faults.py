"""Fault injection, and the one task that writes a session's frames through it.

The reference AppServer is a fault injector for the end-to-end tests. The
faults act on the frames the server sends after `welcome`, per connection:

- `drop_every=N`: after the N-th frame the TCP connection is cut without a close handshake;
  whatever was queued behind that frame is lost (a verdict, a delivery), as on a real network;
- `duplicate_every=N`: every N-th frame is sent twice;
- `delay_ms=D`: every frame (the handshake too) leaves no earlier than D ms after it was
  queued; order is kept, throughput is not throttled.

Reordering is not offered: a peer cannot detect a reordered live `deliver` (numbers may skip
by design, §4.1), so it would lose messages rather than exercise any recovery path.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import trio
import trio_websocket

if TYPE_CHECKING:
    from ._counters import ServerCounters

_QUEUE_FRAMES: Final = 32
_CLOSE_TIMEOUT_S: Final = 1.0


@dataclass(slots=True)
class Faults:
    """What the server does wrong on purpose. Read for every frame, so tests may change it
    while sessions run (`server.faults = Faults(drop_every=5)`)."""

    drop_every: int | None = None
    duplicate_every: int | None = None
    delay_ms: float = 0.0

    def __post_init__(self) -> None:
        for name in ("drop_every", "duplicate_every"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ValueError(f"`{name}` must be a positive integer")
        if not math.isfinite(self.delay_ms) or self.delay_ms < 0:
            raise ValueError("`delay_ms` must be a non-negative number")

    @property
    def active(self) -> bool:
        return bool(self.drop_every or self.duplicate_every or self.delay_ms)


@dataclass(frozen=True, slots=True)
class _Out:
    text: str
    queued_at: float
    counted: bool  # subject to drop / duplicate (everything after the handshake)
    close_code: int | None = None
    close_reason: str | None = None


class FrameWriter:
    """Sends a session's frames in the order they were queued, applying the server's faults.

    One writer per connection keeps the frame order of the protocol (a `batch` and its
    `backlog_end`, `submit_result`s in submission order) whatever task queued them.
    """

    def __init__(
        self,
        ws: trio_websocket.WebSocketConnection,
        stream: trio.abc.Stream,
        faults: Callable[[], Faults],
        counters: ServerCounters,
    ) -> None:
        self._ws = ws
        self._stream = stream
        self._faults = faults
        self._counters = counters
        self._send, self._receive = trio.open_memory_channel[_Out](_QUEUE_FRAMES)
        self._counted = 0
        # When a frame was last queued or sent: "has sent nothing for an interval" (§3.2).
        self.last_active = trio.current_time()
        self.finished = trio.Event()

    async def send(self, text: str, *, counted: bool = True) -> None:
        """Queues one frame; waits only while the queue is full (the peer reads slowly)."""
        self.last_active = trio.current_time()
        await self._send.send(_Out(text, self.last_active, counted))

    async def close(self, code: int, reason: str, *, last: str | None = None) -> None:
        """Closes after the frames already queued and `last` (a fatal `error`), and waits
        until that is done; cuts the connection instead if the peer does not read."""
        now = trio.current_time()
        try:
            if last is not None:
                self._send.send_nowait(_Out(last, now, False))
            self._send.send_nowait(_Out("", now, False, code, reason))
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            await self.abort()
            return
        with trio.move_on_after(2 * _CLOSE_TIMEOUT_S + self._faults().delay_ms / 1000):
            await self.finished.wait()
        if not self.finished.is_set():
            await self.abort()

    async def abort(self) -> None:
        """Cuts the TCP connection: the peer sees it drop, with no close frame."""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await trio.aclose_forcefully(self._stream)

    async def run(self) -> None:
        try:
            async for out in self._receive:
                delay_ms = self._faults().delay_ms
                if delay_ms:
                    await trio.sleep_until(out.queued_at + delay_ms / 1000)
                if out.close_code is not None:
                    with trio.move_on_after(_CLOSE_TIMEOUT_S):
                        await self._ws.aclose(out.close_code, out.close_reason)
                    await self.abort()
                    return
                if not await self._write(out):
                    return
        except trio_websocket.ConnectionClosed:
            pass
        finally:
            # Whoever queues a frame now learns at once that the connection is gone.
            self._receive.close()
            self.finished.set()

    async def _write(self, out: _Out) -> bool:
        await self._ws.send_message(out.text)
        self.last_active = trio.current_time()
        self._counters.frames_sent += 1
        if not out.counted:
            return True
        self._counted += 1
        faults = self._faults()
        if faults.duplicate_every and self._counted % faults.duplicate_every == 0:
            await self._ws.send_message(out.text)
            self._counters.frames_duplicated += 1
        if faults.drop_every and self._counted % faults.drop_every == 0:
            self._counters.connections_dropped += 1
            await self.abort()
            return False
        return True
