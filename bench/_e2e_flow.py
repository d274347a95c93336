"""The message flow of `lineup bench e2e`: an agent that stamps its messages, and the two
ends that see them arrive.

Every message's text is `TAG N SENT_NS`: `SENT_NS` is the agent's `time.time_ns()` when it
queued the message (one machine, one clock). (a) a bare client (`Link`, runtime role)
takes its own `time.time_ns()` on receipt; (b) the chat app's SDK writes the time it
applied the message into its event log (`apps/chat/app.db`, `at_ns`), read back here.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from ._envelope import percentile
from ._procs import BenchError

CONVERSATION = "conv-bench"


@dataclass
class Arrivals:
    """What one end has received: per tag, `(n, sent_ns, arrived_ns)` in arrival order."""

    by_tag: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)

    def add(self, text: str, arrived_ns: int) -> None:
        tag, n, sent = text.split(" ")
        self.by_tag.setdefault(tag, []).append((int(n), int(sent), arrived_ns))

    def count(self, tag: str) -> int:
        return len(self.by_tag.get(tag, ()))


@dataclass(frozen=True)
class Window:
    """One measured batch of messages at one end."""

    count: int
    seconds: float
    latencies_ms: list[float]

    @property
    def msgs_per_s(self) -> float:
        return self.count / self.seconds

    def p(self, q: float) -> float:
        return percentile(self.latencies_ms, q)


def window(arrivals: Arrivals, tag: str, count: int, *, start_ns: int | None = None) -> Window:
    """From `start_ns` (default: the first message's send) to the last arrival."""
    rows = arrivals.by_tag.get(tag, [])
    if len(rows) != count or sorted(n for n, _, _ in rows) != list(range(count)):
        raise BenchError(f"{tag}: {len(rows)} of {count} messages arrived, or not each once")
    if [n for n, _, _ in rows] != list(range(count)):
        raise BenchError(f"{tag}: messages arrived out of the agent's order")
    first = start_ns if start_ns is not None else min(sent for _, sent, _ in rows)
    last = max(arrived for _, _, arrived in rows)
    latencies = [(arrived - sent) / 1e6 for _, sent, arrived in rows]
    return Window(count, max((last - first) / 1e9, 1e-9), latencies)


class Agent:
    """The agent's side: bursts and paced runs into one conversation, each message stamped."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def _envelope(self, tag: str, n: int) -> dict[str, Any]:
        text = f"{tag} {n} {time.time_ns()}"
        return dict(
            self.client.envelope("lineup.message", CONVERSATION, {"text": text, "format": "plain"})
        )

    async def burst(self, tag: str, count: int) -> None:
        """Queue `count` messages at once (the link pipelines them); wait for the verdicts."""
        submissions = [self.client.enqueue(self._envelope(tag, n)) for n in range(count)]
        for submission in submissions:
            result = await submission.verdict()
            if result.status != "accepted":
                raise BenchError(f"the AppServer rejected a bench message: {result}")

    async def paced(self, tag: str, count: int, rate: float) -> None:
        """One message every 1/rate s on trio's clock; verdicts collected at the end."""
        start = trio.current_time()
        submissions = []
        for n in range(count):
            await trio.sleep_until(start + n / rate)
            submissions.append(self.client.enqueue(self._envelope(tag, n)))
        for submission in submissions:
            await submission.verdict()


@asynccontextmanager
async def open_bench_agent(url: str, credentials: Any) -> AsyncIterator[Agent]:
    from peers.agent import open_agent

    agent_id = credentials.agent_id
    token = credentials.token_for_agent(agent_id)
    async with open_agent(url, agent_id=agent_id, token=token, receive=False) as client:
        yield Agent(client)


@asynccontextmanager
async def open_bare_client(
    url: str, token: str, arrivals: Arrivals, *, cursor: int = 0
) -> AsyncIterator[Any]:
    """(a) the bare end: a `Link` in the runtime role that timestamps, acks and keeps
    nothing else; yields the link once it is live (caught up)."""
    from link import Link

    link = Link(url, role="runtime", peer_id="bench-bare", token=token, cursor=cursor)

    async def read() -> None:
        async for received in link.messages:
            now = time.time_ns()
            arrivals.add(received.message["payload"]["text"], now)
            link.ack(received.seq)

    async with trio.open_nursery() as nursery:
        await nursery.start(link.run)
        nursery.start_soon(read)
        yield link
        nursery.cancel_scope.cancel()


class ChatLog:
    """(b) the chat app's event log, read-only, from where the last read stopped."""

    def __init__(self, app_dir: Path, arrivals: Arrivals) -> None:
        self.path = app_dir / "app.db"
        self.arrivals = arrivals
        self.pos = 0

    def poll(self) -> None:
        if not self.path.exists():
            return
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT pos, json_extract(body, '$.payload.text'), at_ns FROM events"
                " WHERE pos > ? AND kind = 'agent' AND conversation_id = ? ORDER BY pos",
                (self.pos, CONVERSATION),
            ).fetchall()
        except sqlite3.OperationalError:  # the app is creating its schema right now
            return
        finally:
            db.close()
        for pos, text, at_ns in rows:
            self.pos = pos
            self.arrivals.add(text, at_ns)

    async def wait(self, tag: str, count: int, timeout: float) -> None:
        def arrived() -> bool:
            self.poll()
            return self.arrivals.count(tag) >= count

        await _wait(arrived, timeout, f"{count} '{tag}' messages in the chat's log", every=0.05)


async def wait_arrivals(arrivals: Arrivals, tag: str, count: int, timeout: float) -> None:
    await _wait(lambda: arrivals.count(tag) >= count, timeout, f"{count} '{tag}' messages")


async def _wait(predicate: Any, timeout: float, what: str, every: float = 0.01) -> None:
    from ._e2e_procs import wait_for

    await wait_for(predicate, timeout, what, every=every)
