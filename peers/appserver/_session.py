"""One WebSocket connection: handshake, sync and live delivery, acks, submissions, heartbeats.

A session runs four tasks: the reader (frames in, handled in arrival order, so verdicts go
out in submission order), the writer (`FrameWriter`, frames out in queue order), the pump
(live `deliver`s within the `max_unacked` window) and the watchdog (pings when idle, the
3-interval timeout). The batch/backlog_end pair and the pump share a lock, so the first live
`deliver` always follows `backlog_end` and nothing falls between them (§4.2).
"""

from __future__ import annotations

import contextlib
import secrets
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import trio
import trio_websocket

from contracts import (
    RUNTIME_GLOBAL_CONVERSATION,
    SUPPORTED_PROTOCOL_VERSIONS,
    Ack,
    BacklogEnd,
    Code,
    ContractError,
    ErrorFrame,
    Frame,
    Hello,
    Ping,
    Pong,
    Submit,
    Sync,
    Welcome,
    encode_frame,
    negotiate_version,
    utc_timestamp,
    validate_frame,
)

from ._admission import Peer
from ._faults import FrameWriter
from ._store import StoredItem

if TYPE_CHECKING:
    from ._core import ServerCore

# Close codes of docs/protocol.md §3.1.
CLOSE_PROTOCOL: Final = 4400
CLOSE_UNAUTHORIZED: Final = 4401
CLOSE_UNSUPPORTED_VERSION: Final = 4406
CLOSE_TIMEOUT: Final = 4408
_FRAME_OVERHEAD: Final = 64  # `{"frame":"batch","items":[…]}` around the items
# Verdicts admitted and not yet sent, per session: past it the read loop waits (a peer
# that submits faster than the disk syncs is slowed down, not buffered without end).
VERDICTS_WAITING: Final = 256


class _Fatal(Exception):
    """A fatal `error` frame to send, then the close code to close with (§3.1)."""

    def __init__(
        self, code: Code, detail: str, close_code: int, *, supported: list[int] | None = None
    ) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.close_code = close_code
        self.supported = supported


def _text(frame: Frame) -> str:
    return encode_frame(frame).decode()


# Batches and deliveries splice each message's stored text into the frame. The server
# validated every message at its door and stored it as compact JSON (`Store.append`), so
# this is byte for byte what `encode_frame` of the parsed message would give, without a
# parse and a re-encode per message (half the server's CPU in a catch-up).
def _batch_text(items: list[tuple[int, str]]) -> str:
    inner = ",".join(f'{{"seq":{seq},"message":{body}}}' for seq, body in items)
    return f'{{"frame":"batch","items":[{inner}]}}'


def _deliver_text(seq: int, body: str) -> str:
    return f'{{"frame":"deliver","seq":{seq},"message":{body}}}'


async def _quietly(task: Callable[..., Awaitable[None]], *args: Any) -> None:
    """A helper task ends with its connection; the reader reports how it ended."""
    with contextlib.suppress(trio_websocket.ConnectionClosed, trio.BrokenResourceError):
        await task(*args)


class Session:
    def __init__(
        self, core: ServerCore, ws: trio_websocket.WebSocketConnection, stream: trio.abc.Stream
    ) -> None:
        self._core = core
        self._ws = ws
        self._writer = FrameWriter(ws, stream, lambda: core.faults, core.counters)
        self.session_id = "s_" + secrets.token_urlsafe(12)
        self.peer: Peer | None = None
        self._last_received = trio.current_time()
        self._lock = trio.Lock()  # sync answers and live deliveries, one at a time
        self._live = False
        self._position = 0  # highest seq sent to this peer on this connection
        self._in_flight: deque[int] = deque()  # delivered, not yet acked
        self._acked = 0
        self._wake = trio.Event()
        self._current_conversation: str | None = None  # for legacy messages (§8)
        self._ping_nonce = 0
        # Verdicts wait here, in submission order, until what they say is on disk: the
        # read loop goes on admitting, so a burst's verdicts share one sync.
        self._verdicts, self._unanswered = trio.open_memory_channel[Frame](VERDICTS_WAITING)

    # --- lifecycle ---------------------------------------------------------------------

    async def run(self) -> None:
        interval = self._core.limits.heartbeat_interval_ms / 1000
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._writer.run)
            try:
                with trio.move_on_after(3 * interval) as waiting:
                    self.peer = await self._handshake()
                if waiting.cancelled_caught:  # §3.2: no frame at all for three intervals
                    await self._time_out()
                    return
                self._core.attach(self)
                nursery.start_soon(_quietly, self._pump)
                nursery.start_soon(_quietly, self._answer)
                nursery.start_soon(_quietly, self._watchdog, nursery.cancel_scope)
                await self._read_loop()
            except _Fatal as fatal:
                error = ErrorFrame(
                    frame="error",
                    code=fatal.code,
                    detail=fatal.detail,
                    fatal=True,
                    supported_versions=fatal.supported,
                )
                await self._writer.close(fatal.close_code, fatal.code.value, last=_text(error))
            except (trio_websocket.ConnectionClosed, trio.BrokenResourceError):
                pass
            finally:
                self._core.detach(self)
                nursery.cancel_scope.cancel()

    def wake(self) -> None:
        """Something changed (a new message, an ack): the pump looks again."""
        self._wake.set()

    async def _time_out(self) -> None:
        self._core.counters.heartbeat_timeouts += 1
        await self._writer.close(CLOSE_TIMEOUT, "no frame for three heartbeat intervals")

    async def _watchdog(self, scope: trio.CancelScope) -> None:
        """§3.2: ping after an idle interval; close 4408 after three silent ones."""
        interval = self._core.limits.heartbeat_interval_ms / 1000
        while True:
            now = trio.current_time()
            if now - self._last_received >= 3 * interval:
                await self._time_out()
                scope.cancel()
                return
            if now - self._writer.last_active >= interval:
                self._ping_nonce += 1
                self._core.counters.pings_sent += 1
                await self._send(Ping(frame="ping", nonce=self._ping_nonce))
                continue
            await trio.sleep_until(
                min(self._last_received + 3 * interval, self._writer.last_active + interval)
            )

    # --- frames in ---------------------------------------------------------------------

    async def _receive(self) -> Frame:
        raw = await self._ws.get_message()
        self._last_received = trio.current_time()
        self._core.counters.frames_received += 1
        if isinstance(raw, bytes):
            raise _Fatal(Code.PROTOCOL_ERROR, "frames are text, not binary", CLOSE_PROTOCOL)
        limit = self._core.limits.max_frame_bytes
        if len(raw) > limit or len(raw.encode("utf-8", "surrogatepass")) > limit:
            raise _Fatal(Code.TOO_LARGE, f"a frame is at most {limit} bytes", CLOSE_PROTOCOL)
        try:
            return validate_frame(raw, sent_by="client")
        except ContractError as exc:
            raise _Fatal(exc.code, exc.detail, CLOSE_PROTOCOL) from None

    async def _handshake(self) -> Peer:
        hello = await self._receive()
        if not isinstance(hello, Hello):
            raise _Fatal(Code.PROTOCOL_ERROR, "the first frame must be hello", CLOSE_PROTOCOL)
        # §3.1: authenticate the token for the role and peer id, then pick the version.
        if not self._core.credentials.authenticate(hello.role, hello.peer_id, hello.token):
            self._core.counters.unauthorized += 1
            raise _Fatal(Code.UNAUTHORIZED, "token rejected", CLOSE_UNAUTHORIZED)
        try:
            version = negotiate_version(hello.protocol_versions)
        except ContractError as exc:
            supported = list(SUPPORTED_PROTOCOL_VERSIONS)
            raise _Fatal(
                exc.code, exc.detail, CLOSE_UNSUPPORTED_VERSION, supported=supported
            ) from None
        limits = self._core.limits
        welcome = Welcome(
            frame="welcome",
            protocol_version=version,
            session_id=self.session_id,
            server_time=utc_timestamp(),
            heartbeat_interval_ms=limits.heartbeat_interval_ms,
            max_frame_bytes=limits.max_frame_bytes,
            max_batch_items=limits.max_batch_items,
            max_unacked=limits.max_unacked,
        )
        await self._send(welcome, counted=False)
        return Peer(hello.role, hello.peer_id)

    async def _read_loop(self) -> None:
        while True:
            frame = await self._receive()
            if isinstance(frame, Sync):
                await self._on_sync(frame)
            elif isinstance(frame, Submit):
                await self._on_submit(frame)
            elif isinstance(frame, Ack):
                self._on_ack(frame)
            elif isinstance(frame, Ping):
                await self._send(Pong(frame="pong", nonce=frame.nonce))
            elif isinstance(frame, Hello):
                raise _Fatal(Code.PROTOCOL_ERROR, "a second hello", CLOSE_PROTOCOL)
            # A pong only proves the peer is alive, which `_receive` has noted.

    async def _on_submit(self, frame: Submit) -> None:
        assert self.peer is not None
        verdict = self._core.admission.submit(
            self.peer,
            frame.idempotency_key,
            frame.message,
            current_conversation=self._current_conversation,
        )
        self._core.counters.count_verdict(verdict.result)
        await self._verdicts.send(verdict.result)
        if verdict.conversation_id is not None:
            self._note_conversation(verdict.conversation_id)
            self._core.notify()

    async def _answer(self) -> None:
        """Send each verdict, in submission order, once every commit it follows is on
        disk (a power cut must not take what the peer was told was taken)."""
        async for verdict in self._unanswered:
            await self._core.durable()
            await self._send(verdict)

    def _on_ack(self, frame: Ack) -> None:
        # Cumulative; a lower ack than before changes nothing (§4.4).
        if frame.cursor > self._acked:
            self._acked = frame.cursor
            while self._in_flight and self._in_flight[0] <= frame.cursor:
                self._in_flight.popleft()
            self.wake()

    def _note_conversation(self, conversation_id: str) -> None:
        if conversation_id != RUNTIME_GLOBAL_CONVERSATION:
            self._current_conversation = conversation_id

    # --- frames out --------------------------------------------------------------------

    async def _send(self, frame: Frame, *, counted: bool = True) -> None:
        await self._writer.send(_text(frame), counted=counted)

    def _query(self, after: int, limit: int) -> tuple[list[StoredItem], bool]:
        assert self.peer is not None
        return self._core.store.visible_after(
            after,
            agent_id=self.peer.agent_filter,
            limit=limit,
            max_bytes=self._core.limits.max_frame_bytes - _FRAME_OVERHEAD,
        )

    def _noted(self, item: StoredItem) -> str:
        """The item's message text as stored, its conversation noted for legacy messages."""
        self._note_conversation(item.conversation_id)
        return item.body

    async def _on_sync(self, frame: Sync) -> None:
        """§4.2: one batch; `backlog_end` too when it reaches the end, then live delivery.

        A sync is answered at any time, live or not: a client that asks for one more page
        after the end simply gets an empty batch and `backlog_end` again.
        """
        last_seq = self._core.store.last_seq
        if frame.cursor > last_seq:
            # Not this stream's cursor (a wiped server, another server): syncing from it
            # would silently skip every message numbered up to it.
            raise _Fatal(
                Code.PROTOCOL_ERROR,
                f"cursor {frame.cursor} is ahead of this stream (last seq {last_seq})",
                CLOSE_PROTOCOL,
            )
        limit = min(frame.limit, self._core.limits.max_batch_items)
        async with self._lock:
            self._live = False
            items, exhausted = self._query(frame.cursor, limit)
            await self._core.durable()
            await self._writer.send(_batch_text([(i.seq, self._noted(i)) for i in items]))
            if items:
                self._position = max(self._position, items[-1].seq)
            if exhausted:
                end = items[-1].seq if items else frame.cursor
                await self._send(BacklogEnd(frame="backlog_end", cursor=end))
                self._position = end
                self._live = True
        self.wake()

    async def _pump(self) -> None:
        """§4.3: push what is new, at most `max_unacked` unacknowledged at a time."""
        max_unacked = self._core.limits.max_unacked
        while True:
            self._wake = trio.Event()
            more = False
            async with self._lock:
                room = max_unacked - len(self._in_flight)
                if self._live and room > 0:
                    want = min(room, self._core.limits.max_batch_items)
                    items, exhausted = self._query(self._position, want)
                    if items:
                        await self._core.durable()
                    for item in items:
                        await self._writer.send(_deliver_text(item.seq, self._noted(item)))
                        self._position = item.seq
                        self._in_flight.append(item.seq)
                    more = not exhausted
            if not more:
                await self._wake.wait()
