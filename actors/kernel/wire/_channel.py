"""A supervised channel: one end of a socketpair carrying length-prefixed msgpack frames.

One writer task owns the socket's send side and writes every queued frame in one
`send_all`. If that task is cancelled mid-write the socket is closed at once, because the
peer would otherwise see half a frame followed by the next one.
"""

from __future__ import annotations

import socket
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

import trio

from ._frames import DEFAULT_MAX_FRAME, Frame, FrameDecoder, FrameError, encode

_BATCH_BYTES = 256 * 1024
T = TypeVar("T")


class ChannelClosed(Exception):
    """The channel is closed: the peer went away, or a frame broke the codec's rules."""


@dataclass(frozen=True)
class ChannelStatistics:
    queued: int
    peak_queued: int
    frames_sent: int
    frames_received: int
    bytes_sent: int
    bytes_received: int
    closed: bool


class Channel:
    def __init__(
        self,
        sock: socket.socket,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        high_water: int = 1024,
    ) -> None:
        if high_water <= 0:
            raise ValueError("`high_water` must be positive")
        sock.setblocking(False)
        self._stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
        self._decoder = FrameDecoder(max_frame=max_frame)
        self._queue: deque[Frame | bytes] = deque()  # bytes: an already encoded frame
        self._high_water = high_water
        self._writer_lot = trio.lowlevel.ParkingLot()
        self._space_lot = trio.lowlevel.ParkingLot()
        self._closed = False
        self._sending = False
        self._writer_parked = False  # unparking nobody costs as much as queueing a frame
        self.close_reason: str | None = None
        self._peak = 0
        self._frames_sent = self._frames_received = 0
        self._bytes_sent = self._bytes_received = 0

    @classmethod
    def from_fd(cls, fd: int, **kwargs: int) -> Channel:
        return cls(socket.socket(fileno=fd), **kwargs)

    @property
    def closed(self) -> bool:
        return self._closed

    def send_nowait(self, frame: Frame | bytes) -> None:
        """Queue a frame without waiting. For senders whose volume is already bounded."""
        if self._closed:
            raise ChannelClosed(self.close_reason or "closed")
        self._queue.append(frame)  # not through `send_many`: every cast comes this way
        self._queued()

    def send_many(self, frames: Iterable[Frame | bytes]) -> None:
        """`send_nowait` for several frames at once, in order."""
        if self._closed:
            raise ChannelClosed(self.close_reason or "closed")
        self._queue.extend(frames)
        self._queued()

    def _queued(self) -> None:
        self._peak = max(self._peak, len(self._queue))
        if self._writer_parked:
            self._writer_lot.unpark_all()

    async def send(self, frame: Frame) -> None:
        """Queue a frame, waiting while the queue is above its high-water mark."""
        while len(self._queue) >= self._high_water and not self._closed:
            await self._space_lot.park()
        self.send_nowait(frame)

    async def run_writer(self) -> None:
        """The channel's only writer. Returns when the channel closes."""
        try:
            while not self._closed:
                if not self._queue:
                    self._writer_parked = True
                    try:
                        await self._writer_lot.park()
                    finally:
                        self._writer_parked = False
                    continue
                chunks: list[bytes] = []
                size = 0
                count = 0
                while self._queue and size < _BATCH_BYTES:
                    item = self._queue.popleft()
                    chunk = item if isinstance(item, bytes) else encode(item)
                    chunks.append(chunk)
                    size += len(chunk)
                    count += 1
                self._space_lot.unpark_all()
                self._sending = True
                await self._stream.send_all(b"".join(chunks))
                self._sending = False
                self._frames_sent += count
                self._bytes_sent += size
                if not self._queue:
                    self._space_lot.unpark_all()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self.close(f"send failed: {exc.__class__.__name__}")
        except BaseException:
            # Cancelled mid-send_all: a half-written frame must never be followed by more.
            self.close("writer cancelled")
            raise

    async def batches(self) -> AsyncIterator[list[Frame]]:
        """Every frame the peer sends, in order, as what each receive brought; ends at
        EOF; raises FrameError on garbage."""
        while (data := await self._receive()) is not None:
            batch = self._decode(self._decoder.feed, data)
            if batch:
                yield batch

    async def packed_batches(self) -> AsyncIterator[list[tuple[Frame, bytes]]]:
        """Like `batches`, each frame with the msgpack bytes it was decoded from."""
        while (data := await self._receive()) is not None:
            batch = self._decode(self._decoder.feed_packed, data)
            if batch:
                yield batch

    async def _receive(self) -> bytes | None:
        """The next bytes from the peer; None (and the channel closed) at EOF."""
        try:
            data = await self._stream.receive_some(65536)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            data = b""
        if not data:
            self.close("peer closed the channel")
            return None
        self._bytes_received += len(data)
        return data

    def _decode(self, feed: Callable[[bytes], list[T]], data: bytes) -> list[T]:
        try:
            batch = feed(data)
        except FrameError as exc:
            self.close(f"malformed frame: {exc}")
            raise
        self._frames_received += len(batch)
        return batch

    async def drain(self) -> None:
        """Wait until every queued frame has been handed to the socket (or the channel closed)."""
        while (self._queue or self._sending) and not self._closed:
            await self._space_lot.park()

    def close(self, reason: str = "closed") -> None:
        if self._closed:
            return
        self._closed = True
        self.close_reason = reason
        self._queue.clear()
        self._stream.socket.close()
        self._writer_lot.unpark_all()
        self._space_lot.unpark_all()

    def statistics(self) -> ChannelStatistics:
        return ChannelStatistics(
            queued=len(self._queue),
            peak_queued=self._peak,
            frames_sent=self._frames_sent,
            frames_received=self._frames_received,
            bytes_sent=self._bytes_sent,
            bytes_received=self._bytes_received,
            closed=self._closed,
        )
