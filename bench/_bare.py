"""The bare baselines the kernel is held against, each end its own process.

`python -m bench._bare ROLE --parent PID ...` with ROLE one of `source`, `sink`,
`relay`. They speak the kernel's frame format (4-byte length + one msgpack map) and use the
same stack (trio, msgpack, sqlite3) but do only their job: no validation, no routing, no
recovery, no flow control. That makes them limits, rebuilt in the same run rather than
quoted from another day.

The relay is the durable baseline (b): it persists every frame into
SQLite in WAL mode with group commit (one transaction for what arrived together, at most
`batch_max` frames, never on a timer), forwards a frame only after its commit, and marks
the sink's batched acks in the next transaction (or in their own when the input is idle).
Keys are the envelopes' time-ordered ids, the table's only index.
"""

from __future__ import annotations

import argparse
import json
import socket
import sqlite3
import sys
import time
from typing import Any

import msgpack
import trio

from ._envelope import HEADER, die_with_parent, envelope, frame

SOURCE_BATCH = 64  # frames per send_all: what this hardware does best at (345k msg/s)
_RECEIVE = 65536  # what the kernel's channel asks for per receive

Decoded = list[tuple[bytes, dict[str, Any]]]


class FrameReader:
    """Whole frames from a stream, one receive at a time: (raw frame bytes, decoded map)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._buffer = b""

    async def batch(self) -> Decoded | None:
        """What one receive completed (possibly nothing yet); None at EOF."""
        data = await self.stream.receive_some(_RECEIVE)
        if not data:
            return None
        buffer = self._buffer + data if self._buffer else data
        out: Decoded = []
        offset, size = 0, len(buffer)
        while size - offset >= 4:
            (length,) = HEADER.unpack_from(buffer, offset)
            end = offset + 4 + length
            if end > size:
                break
            raw = buffer[offset:end]
            out.append((raw, msgpack.unpackb(raw[4:], raw=False)))
            offset = end
        self._buffer = buffer[offset:]
        return out

    async def one(self) -> dict[str, Any]:
        while True:
            batch = await self.batch()
            if batch is None:
                raise EOFError("peer closed before saying anything")
            if batch:
                return batch[0][1]


def _stream(fd: int) -> trio.SocketStream:
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    return trio.SocketStream(trio.socket.from_stdlib_socket(sock))


async def source(fd: int, count: int, rate: float) -> None:
    """Send `count` envelopes once the far end says it is ready; paced if `rate` > 0."""
    stream = _stream(fd)
    await FrameReader(stream).one()  # {"type": "ready"}: time starts now, not at import
    if rate > 0:
        start, interval = trio.current_time(), 1.0 / rate
        for n in range(count):
            await trio.sleep_until(start + n * interval)
            await stream.send_all(frame(envelope(n)))  # one frame per write, as a live hop
    else:
        for first in range(0, count, SOURCE_BATCH):
            last = min(count, first + SOURCE_BATCH)
            await stream.send_all(b"".join(frame(envelope(n)) for n in range(first, last)))
    await stream.aclose()


async def sink(fd: int, count: int, paced: bool, ack: bool) -> dict[str, Any]:
    """Decode every frame; note when the first was sent and the last arrived; maybe ack."""
    stream = _stream(fd)
    reader = FrameReader(stream)
    await stream.send_all(frame({"type": "ready"}))
    received, first_ts, last_ns = 0, 0, 0
    latencies: list[int] = []
    while received < count:
        batch = await reader.batch()
        if batch is None:
            break
        for _, message in batch:
            last_ns = time.time_ns()
            if not received:
                first_ts = message["ts"]
            if paced:
                latencies.append(last_ns - message["ts"])
            received += 1
        if ack and batch:  # acks in batches: one per receive (when the input drains)
            await stream.send_all(frame({"type": "ack", "ids": [m["id"] for _, m in batch]}))
    await stream.aclose()
    return {"count": received, "first_ts": first_ts, "last_ns": last_ns, "latencies": latencies}


class Relay:
    """A → relay → B with durable storage in between (see the module docstring)."""

    def __init__(self, db_path: str, synchronous: str, batch_max: int) -> None:
        self.db = sqlite3.connect(db_path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={synchronous}")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS messages (id TEXT PRIMARY KEY, body BLOB NOT NULL,"
            " state INTEGER NOT NULL) WITHOUT ROWID"
        )
        self.batch_max = batch_max
        self.acks: list[str] = []
        self.idle = False
        self.transactions = 0
        self.stored = 0
        self.marked = 0

    def commit(self, rows: list[tuple[str, bytes]]) -> None:
        """One transaction: the new frames plus every ack received so far."""
        self.db.execute("BEGIN")
        if rows:
            self.db.executemany("INSERT INTO messages VALUES (?, ?, 0)", rows)
        if self.acks:
            self.db.executemany(
                "UPDATE messages SET state = 1 WHERE id = ?", [(i,) for i in self.acks]
            )
            self.marked += len(self.acks)
            self.acks = []
        self.db.execute("COMMIT")
        self.transactions += 1
        self.stored += len(rows)

    async def pump(self, up: FrameReader, down: trio.SocketStream) -> None:
        while True:
            self.idle = True
            batch = await up.batch()
            self.idle = False
            if batch is None:
                break
            for first in range(0, len(batch), self.batch_max):
                chunk = batch[first : first + self.batch_max]
                self.commit([(message["id"], raw[4:]) for raw, message in chunk])
                await down.send_all(b"".join(raw for raw, _ in chunk))  # after the commit
        self.idle = True

    async def mark_acks(self, down: FrameReader) -> None:
        while (batch := await down.batch()) is not None:
            for _, message in batch:
                self.acks.extend(message["ids"])
            if self.idle and self.acks:
                self.commit([])  # no frames to share a transaction with

    async def run(self, up_fd: int, down_fd: int) -> dict[str, Any]:
        up_stream, down_stream = _stream(up_fd), _stream(down_fd)
        up, down = FrameReader(up_stream), FrameReader(down_stream)
        await down.one()  # the sink is ready ...
        await up_stream.send_all(frame({"type": "ready"}))  # ... so the source may start
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.mark_acks, down)
            await self.pump(up, down_stream)
        if self.acks:
            self.commit([])
        self.db.close()
        return {"transactions": self.transactions, "stored": self.stored, "acked": self.marked}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench._bare")
    parser.add_argument("role", choices=["source", "sink", "relay"])
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--down-fd", type=int)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--ack", action="store_true")
    parser.add_argument("--db")
    parser.add_argument("--synchronous", default="FULL")
    parser.add_argument("--batch-max", type=int, default=256)
    args = parser.parse_args(argv)
    die_with_parent(args.parent)
    result: dict[str, Any] = {}
    if args.role == "source":
        trio.run(source, args.fd, args.count, args.rate)
    elif args.role == "sink":
        result = trio.run(sink, args.fd, args.count, args.rate > 0, args.ack)
    else:
        relay = Relay(args.db, args.synchronous, args.batch_max)
        result = trio.run(relay.run, args.fd, args.down_fd)
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
