"""What the AppServer's sessions share (`ServerCore`): its store, its rules, its limits, its
faults, its counters and each other, apart from the server so that a session sees the
core without importing the server that makes sessions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import trio

from contracts import MAX_BATCH_ITEMS, MAX_ENVELOPE_BYTES, MAX_FRAME_BYTES

from ._admission import Admission
from ._counters import ServerCounters
from ._credentials import Credentials
from ._faults import Faults
from ._store import Store


class Waking(Protocol):
    """A session, as the core sees it: woken when the stream has more for it."""

    def wake(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Limits:
    """What `welcome` announces (§3.1), checked at the door like every option."""

    heartbeat_interval_ms: int = 15_000
    max_frame_bytes: int = MAX_FRAME_BYTES
    max_batch_items: int = MAX_BATCH_ITEMS
    max_unacked: int = 1024

    def __post_init__(self) -> None:
        if not 1000 <= self.heartbeat_interval_ms <= 300_000:
            raise ValueError("`heartbeat_interval_ms` must be within 1000 … 300000")
        if not MAX_ENVELOPE_BYTES + 4096 <= self.max_frame_bytes <= MAX_FRAME_BYTES:
            raise ValueError(
                f"`max_frame_bytes` must be within {MAX_ENVELOPE_BYTES + 4096} … {MAX_FRAME_BYTES}"
            )
        if not 1 <= self.max_batch_items <= MAX_BATCH_ITEMS:
            raise ValueError(f"`max_batch_items` must be within 1 … {MAX_BATCH_ITEMS}")
        if not 1 <= self.max_unacked <= 1 << 20:
            raise ValueError("`max_unacked` must be within 1 … 1048576")


@dataclass(slots=True)
class ServerCore:
    """What sessions share: the store, the rules, the limits, the faults, each other."""

    store: Store
    admission: Admission
    credentials: Credentials
    limits: Limits
    faults: Faults
    counters: ServerCounters = field(default_factory=ServerCounters)
    sessions: set[Waking] = field(default_factory=set)
    _syncing: trio.Event | None = None  # a WAL sync is under way; set when it ends

    async def durable(self) -> None:
        """Return once every commit made so far is on disk: what a verdict or a delivery
        about to leave says must survive a power cut. One sync (on a worker thread) serves
        every session that asked before it began: a burst of submissions shares fsyncs."""
        wanted = self.store.writes
        while self.store.synced < wanted:
            if self._syncing is not None:
                await self._syncing.wait()
                continue
            self._syncing = trio.Event()
            try:
                await trio.to_thread.run_sync(self.store.sync_wal)
            finally:
                self._syncing.set()
                self._syncing = None

    def attach(self, session: Waking) -> None:
        self.sessions.add(session)

    def detach(self, session: Waking) -> None:
        self.sessions.discard(session)

    def notify(self) -> None:
        for session in self.sessions:
            session.wake()
