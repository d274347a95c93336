"""Bench-only actors, spawned by a real supervisor as `bench._actors:NAME`.

They do as little as possible besides the kernel's own work, so the figures are the
kernel's: the sink only counts and timestamps, and reports once per run by writing one
file, because polling the supervisor or calling back per message would load the very
path being measured.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, ClassVar

import trio
from pydantic import ConfigDict
from typing_extensions import TypedDict

from actors.kernel import Actor, Door, Message, accept, handles

from ._envelope import envelope


def write_atomically(path: str, value: Any) -> None:
    """The bench polls for the file; it must never see half of it."""
    partial = f"{path}.partial"
    Path(partial).write_text(json.dumps(value))
    os.replace(partial, path)


class Begin(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    count: int
    out: str
    paced: bool


class Envelope(TypedDict):
    """The bench's 208-byte envelope, as a runtime actor declares a body's type."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    id: str
    type: str
    scope: str
    payload: dict[str, Any]
    ts: int


# Each bench actor's door, as a runtime actor has one, so that the kernel path (c) pays what
# the runtime's door costs its own traffic: the sender's check in the supervisor (a body is
# validated only when it comes from outside the runtime's actors, as the operator's does).
PRODUCER_DOOR = Door(
    {
        "bench.burst": accept("debug", body=dict[str, Any]),
        "bench.paced": accept("debug", body=dict[str, Any]),
        "bench.fill": accept("debug", body=dict[str, Any]),
    }
)
SINK_DOOR = Door(
    {"bench.begin": accept("producer", body=Begin), "bench.item": accept("producer", body=Envelope)}
)
REPLAYER_DOOR = Door({"bench.hold": accept("producer", body=dict[str, Any])})
IDLE_DOOR = Door({})


class Producer(Actor):
    """Casts envelopes to another actor: a burst as fast as the kernel takes them, or paced."""

    door: ClassVar[Door | None] = PRODUCER_DOOR

    @handles("bench.burst")
    async def burst(self, msg: Message) -> None:
        to, count = msg.body["to"], msg.body["count"]
        begin = {"count": count, "out": msg.body["out"], "paced": False}
        await self.cast(to, "bench.begin", begin)
        for n in range(count):
            await self.cast(to, "bench.item", envelope(n))

    @handles("bench.paced")
    async def paced(self, msg: Message) -> None:
        to, count, rate = msg.body["to"], msg.body["count"], msg.body["rate"]
        begin = {"count": count, "out": msg.body["out"], "paced": True}
        await self.cast(to, "bench.begin", begin)
        start, interval = trio.current_time(), 1.0 / rate
        for n in range(count):
            await trio.sleep_until(start + n * interval)
            await self.cast(to, "bench.item", envelope(n))  # `ts` is taken right here

    @handles("bench.fill")
    async def fill(self, msg: Message) -> None:
        for n in range(msg.body["count"]):
            await self.cast(msg.body["to"], "bench.hold", {"n": n})


class Sink(Actor):
    """Counts `bench.item`s; after the announced count, writes one result file."""

    door: ClassVar[Door | None] = SINK_DOOR

    async def on_start(self) -> None:
        self.expected = 0
        self.out = ""
        self.paced = False
        self.received = 0
        self.first_ts = 0
        self.latencies: list[int] = []

    @handles("bench.begin")
    async def begin(self, msg: Message) -> None:
        self.expected, self.out = msg.body["count"], msg.body["out"]
        self.paced = msg.body["paced"]
        self.received, self.first_ts, self.latencies = 0, 0, []

    @handles("bench.item")
    async def item(self, msg: Message) -> None:
        now = time.time_ns()
        sent = msg.body["ts"]
        if not self.received:
            self.first_ts = sent
        if self.paced:
            self.latencies.append(now - sent)
        self.received += 1
        if self.received == self.expected:
            result = {
                "count": self.received,
                "first_ts": self.first_ts,
                "last_ns": now,
                "latencies": self.latencies,
            }
            write_atomically(self.out, result)


class Replayer(Actor):
    """Works slowly through a backlog; notes when each incarnation handles its first message.

    The bench SIGKILLs it and reads, from this actor's own line in `config["log"]`, when the
    next incarnation handled the replayed message: kill -> first replayed message handled.
    """

    door = REPLAYER_DOOR

    async def on_start(self) -> None:
        self.noted = False

    @handles("bench.hold")
    async def hold(self, msg: Message) -> None:
        if not self.noted:
            now = time.time_ns()
            line = f"{os.getpid()} {now} {msg.attempt}\n".encode()
            fd = os.open(self.config["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)  # one short append: the bench never reads half a line
            finally:
                os.close(fd)
            self.noted = True
        await trio.sleep(self.config.get("hold_s", 0.001))


class Idle(Actor):
    """Does nothing at all: its process is what one idle actor costs in memory."""

    door = IDLE_DOOR


class UncheckedProducer(Producer):
    """The same actors without their doors: the kernel path with the door off, to measure
    what it costs (only the bench runs a supervisor with `door_checks` off)."""

    door = None


class UncheckedSink(Sink):
    door = None
