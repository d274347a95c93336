"""The calls `lineup bench tools` times, and the bare end that answers them in the baseline.

Both paths are driven by the same agent code: an `AgentClient` (inbox=False) whose `call()`
is followed to its one final with `outcome()`. A call's time is taken in the bench's process
with `time.perf_counter_ns()`, from just before `call()` builds the envelope to the moment
`outcome()` returns the final. Each call's wall-clock submit time (`time.time_ns()`) is kept
too, to lay it beside the steps the tool router recorded in the call's history.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

from ._envelope import percentile
from ._procs import BenchError

CONVERSATION = "conv-bench"
PACED_RATE = 100.0  # calls/s
BARE_PEER = "bench-bare"


@dataclass(frozen=True)
class Timed:
    """One call as the agent saw it."""

    call_id: str
    submitted_ns: int  # time.time_ns(): the same clock as the runtime's at_ms
    round_trip_ms: float
    ok: bool
    final_type: str


@dataclass
class Batch:
    """A measured batch of calls: each call, and first submit → last final."""

    calls: list[Timed] = field(default_factory=list)
    first_ns: int = 0
    last_ns: int = 0

    @property
    def seconds(self) -> float:
        return max((self.last_ns - self.first_ns) / 1e9, 1e-9)

    @property
    def calls_per_s(self) -> float:
        return len(self.calls) / self.seconds

    @property
    def failed(self) -> list[Timed]:
        return [c for c in self.calls if not c.ok]

    def p(self, q: float) -> float:
        return percentile([c.round_trip_ms for c in self.calls], q)


class Caller:
    """The agent's side: one call followed to its final, many at once."""

    def __init__(self, agent: Any, method: str, *, app_scope: str | None, revision: str | None):
        self.agent = agent
        self.method = method
        self.app_scope = app_scope  # the baseline has no inventory: app and revision given
        self.revision = revision
        self.n = 0

    async def one(self, batch: Batch | None = None) -> Timed:
        self.n += 1
        submitted_ns = time.time_ns()
        started = time.perf_counter_ns()
        if batch is not None and not batch.first_ns:
            batch.first_ns = time.perf_counter_ns()
        call = self.agent.call(
            CONVERSATION,
            self.method,
            {"n": self.n},
            app_scope=self.app_scope,
            revision=self.revision,
        )
        try:
            final = await call.outcome()
        except Exception as exc:  # the connection ended, or the AppServer refused the call
            raise BenchError(f"call {call.call_id}: {exc}") from exc
        ended = time.perf_counter_ns()
        timed = Timed(
            call.call_id,
            submitted_ns,
            (ended - started) / 1e6,
            final.type == "lineup.tool.result",
            final.type
            + ("" if final.type == "lineup.tool.result" else f" {final.envelope.payload}"),
        )
        if batch is not None:
            batch.calls.append(timed)
            batch.last_ns = max(batch.last_ns, ended)
        return timed

    async def sequential(self, count: int) -> Batch:
        """One call at a time, each made once the one before has ended: the path's own
        latency, with no call queued behind another."""
        batch = Batch()
        for _ in range(count):
            await self.one(batch)
        return batch

    async def paced(self, count: int, rate: float = PACED_RATE) -> Batch:
        """One call started every 1/rate s on trio's clock, each followed on its own."""
        batch = Batch()
        async with trio.open_nursery() as nursery:
            start = trio.current_time()
            for i in range(count):
                await trio.sleep_until(start + i / rate)
                nursery.start_soon(self.one, batch)
        return batch

    async def burst(self, count: int, in_flight: int) -> Batch:
        """`count` calls, at most `in_flight` open at once, as fast as they end."""
        batch = Batch()
        limiter = trio.Semaphore(in_flight)

        async def one() -> None:
            try:
                await self.one(batch)
            finally:
                limiter.release()

        async with trio.open_nursery() as nursery:
            for _ in range(count):
                await limiter.acquire()
                nursery.start_soon(one)
        return batch


@asynccontextmanager
async def open_bench_agent(url: str, credentials: Any) -> AsyncIterator[Any]:
    """The agent of the AppServer's credentials: receives, keeps no inbox (a reader of
    `receive()` would otherwise hold the cursor and, past its window, delivery)."""
    from peers.agent import open_agent

    agent_id = credentials.agent_id
    token = credentials.token_for_agent(agent_id)
    async with open_agent(url, agent_id=agent_id, token=token, inbox=False) as agent:
        await agent.wait_live()
        yield agent


@asynccontextmanager
async def open_bare_answerer(url: str, token: str, app_scope: str) -> AsyncIterator[Any]:
    """The baseline's far end: a `Link` in the runtime role that answers every
    `lineup.tool.invoke` at once with one `lineup.tool.result` (shaped as the tool router's,
    from the app), queued without waiting for its verdict, and acks everything it reads.
    Nothing is validated or stored on its side."""
    from contracts import new_message_id, utc_timestamp
    from link import Link

    link = Link(url, role="runtime", peer_id=BARE_PEER, token=token)

    def answer(invoke: dict[str, Any]) -> dict[str, Any]:
        return {
            "v": 1,
            "id": new_message_id(),
            "type": "lineup.tool.result",
            "timestamp": utc_timestamp(),
            "sender": {"kind": "app", "id": app_scope},
            "target": {"kind": "runtime", "app_scope": app_scope},
            "scope": invoke["scope"],
            "correlation": {
                "call_id": invoke["correlation"]["call_id"],
                "reply_to": invoke["id"],
            },
            "payload": {"output": dict(invoke["payload"]["arguments"])},
        }

    async def read() -> None:
        async for received in link.messages:
            message = received.message
            if message.get("type") == "lineup.tool.invoke":
                link.enqueue(answer(message))
            link.ack(received.seq)

    async with trio.open_nursery() as nursery:
        await nursery.start(link.run)
        await link.wait_state("live")
        nursery.start_soon(read)
        yield link
        nursery.cancel_scope.cancel()


async def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `predicate` every 10 ms on trio's clock; BenchError after `timeout` s."""
    with trio.move_on_after(timeout):
        while True:
            value = predicate()
            if value:
                return value
            await trio.sleep(0.01)
    raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}")


async def within(timeout: float, what: str, work: Any, *args: Any) -> Any:
    """`await work(*args)`, a BenchError if it takes longer than `timeout` s."""
    with trio.move_on_after(timeout):
        return await work(*args)
    raise BenchError(f"{what} did not finish in {timeout:.0f} s")
