"""`Link`: one client's connection to the AppServer, kept up across drops (docs/protocol.md).

The runtime and the agent speak the same frames (§1), so the link is role-neutral: the agent
client builds on it, and tests use it as a runtime. What it guarantees its user:

- **messages in order, each once**: items and deliveries go to `messages` in `seq` order;
  a number at or below the highest one already passed on (a redelivery after a reconnect,
  a duplicated frame) is dropped. After any reconnect it syncs from that number.
- **submissions exactly once**: `submit` keeps the item until its verdict arrives; after a
  reconnect every item without a verdict is sent again, in order, with the same idempotency
  key, so the server returns the verdict it already gave (`duplicate: true`).
- **definite failures**: `unauthorized` and `unsupported_version` end `run()` with
  `LinkFailed` (retrying would not help); everything else is retried with exponential
  backoff and jitter.

Paging (§4.2): the link asks for the next page after every non-empty batch, and switches to
live on `backlog_end`. A server may cut a batch short to stay under `max_frame_bytes`, so the
length of a batch does not tell whether the backlog is exhausted, and `backlog_end` arrives
only after the batch has been read; one spare `sync` at the end of a catch-up (answered by
an empty batch) is the price of never waiting for a page that is not coming.
"""

from __future__ import annotations

import contextlib
import logging
import random
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import trio
import trio_websocket

from contracts import (
    MAX_BATCH_ITEMS,
    MAX_ENVELOPE_BYTES,
    SUPPORTED_PROTOCOL_VERSIONS,
    Ack,
    BacklogEnd,
    Batch,
    Code,
    ContractError,
    Deliver,
    ErrorFrame,
    Frame,
    Hello,
    Ping,
    Pong,
    Submit,
    SubmitResult,
    Sync,
    Welcome,
    encode_frame,
    validate_frame,
)

from ._shallow import StreamFrame, read_stream_frame

log = logging.getLogger("lineup.agent.link")

LinkState = Literal["connecting", "syncing", "live", "backoff", "failed"]
# Close codes after which retrying cannot succeed (docs/protocol.md §3.1).
_DEFINITE_CLOSE: Final = {4401: Code.UNAUTHORIZED, 4406: Code.UNSUPPORTED_VERSION}
_RECEIVE_BUFFER: Final = 64 * 1024
# The client pings after a quarter interval more than it must: the server's ping, which it
# answers, then usually keeps it from pinging at all, so an idle connection carries one
# ping and one pong an interval instead of two of each, and wakes each side half as often.
PING_SLACK: Final = 1.25
MAX_SUBMIT_BYTES: Final = MAX_ENVELOPE_BYTES + 4096


def _endpoint(url: str) -> tuple[str, int, str, str]:
    """host, port, resource and Host header of a ws:// or wss:// URL."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"{url!r} is not a ws:// or wss:// URL")
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    header = host if parts.port is None else f"{host}:{parts.port}"
    return parts.hostname, port, resource, header


@contextlib.asynccontextmanager
async def open_websocket(
    url: str, *, connect_timeout: float = 10.0, **options: Any
) -> AsyncIterator[trio_websocket.WebSocketConnection]:
    """A client WebSocket, like `trio_websocket.open_websocket_url`, whose TCP stream is
    closed on exit whoever closed first (trio-websocket 0.12 leaves a client's socket open
    when the server initiates the close). `options` go to `wrap_client_stream`."""
    host, port, resource, header = _endpoint(url)
    with trio.fail_after(connect_timeout):
        stream: trio.SocketStream | trio.SSLStream[trio.SocketStream]
        stream = await trio.open_tcp_stream(host, port)
    try:
        if url.startswith("wss:"):
            context = ssl.create_default_context()
            stream = trio.SSLStream(stream, context, server_hostname=host, https_compatible=True)
        async with trio.open_nursery() as nursery:
            with trio.fail_after(connect_timeout):
                ws = await trio_websocket.wrap_client_stream(
                    nursery, stream, header, resource, **options
                )
            try:
                yield ws
            finally:
                with trio.move_on_after(1):
                    await ws.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        if len(group.exceptions) != 1:
            raise
        error = group.exceptions[0]  # the one error of the body or of the reader
        raise error from error.__cause__
    finally:
        await trio.aclose_forcefully(stream)


class LinkFailed(Exception):
    """The AppServer refused this client for good (bad token, no common version, ...)."""

    def __init__(self, code: Code, detail: str, supported_versions: list[int] | None = None):
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.supported_versions = supported_versions


@dataclass(frozen=True, slots=True)
class Received:
    """One message of the stream, as the server forwarded it, with its number."""

    seq: int
    message: dict[str, Any]
    # With `Link(raw_messages=True)`: the message's exact JSON text from the frame, not
    # yet validated beyond the frame layer (the receiver's `validate_message` does that).
    text: str | None = None


@dataclass(frozen=True, slots=True)
class LinkStatistics:
    state: LinkState
    connects: int
    received_upto: int  # highest seq passed on to `messages`
    acked: int
    pending_submits: int
    dropped_redeliveries: int
    last_error: str | None
    pings_sent: int  # its own heartbeats: none while the server's keep the connection busy


@dataclass(slots=True)
class _Pending:
    serial: int  # enqueue order
    key: str
    text: str
    done: trio.Event
    result: SubmitResult | None = None
    error: LinkFailed | None = None


class Submission:
    """One queued submission; its verdict arrives once, whatever happens to connections."""

    def __init__(self, pending: _Pending) -> None:
        self._pending = pending

    @property
    def idempotency_key(self) -> str:
        return self._pending.key

    async def verdict(self) -> SubmitResult:
        await self._pending.done.wait()
        if self._pending.error is not None:
            raise self._pending.error
        assert self._pending.result is not None
        return self._pending.result


class _ConnectionLost(Exception):
    pass


class Link:
    """A client of the AppServer. Run `run()` in a nursery; read `messages`; `submit`; `ack`.

    `cursor` is where syncing starts (the highest seq the caller has durably processed, 0
    before anything); with `receive=False` the link never syncs (a send-only client).
    With `raw_messages=True` each `Received` also carries its message's exact text, and
    stream frames are read without decoding their messages to the frame layer's standard
    (`_shallow`): for a receiver that validates every message's text itself (the runtime).
    """

    def __init__(
        self,
        url: str,
        *,
        role: Literal["runtime", "agent"],
        peer_id: str,
        token: str,
        cursor: int = 0,
        receive: bool = True,
        sync_limit: int = MAX_BATCH_ITEMS,
        protocol_versions: tuple[int, ...] = SUPPORTED_PROTOCOL_VERSIONS,
        client_name: str = "lineup-agent",
        client_version: str = "0.1.0",
        backoff_initial: float = 0.05,
        backoff_max: float = 5.0,
        connect_timeout: float = 10.0,
        max_buffered: int | None = None,
        raw_messages: bool = False,
    ) -> None:
        if cursor < 0:
            raise ValueError("`cursor` must be non-negative")
        if not 1 <= sync_limit <= MAX_BATCH_ITEMS:
            raise ValueError(f"`sync_limit` must be within 1 … {MAX_BATCH_ITEMS}")
        if max_buffered is not None and max_buffered < 1:
            raise ValueError("`max_buffered` must be positive (or None: unbounded)")
        if not 0 < backoff_initial <= backoff_max:
            raise ValueError("backoff needs 0 < `backoff_initial` <= `backoff_max`")
        _endpoint(url)  # a malformed URL fails here, not in the retry loop
        self.url = url
        self.role = role
        self.peer_id = peer_id
        hello = Hello.model_validate(
            {
                "frame": "hello",
                "protocol_versions": list(protocol_versions),
                "role": role,
                "peer_id": peer_id,
                "token": token,
                "client": {"name": client_name, "version": client_version},
            }
        )
        self._hello = encode_frame(hello).decode()
        self._receive = receive
        self._raw_messages = raw_messages
        self._sync_limit = sync_limit
        self._backoff = (backoff_initial, backoff_max)
        self._connect_timeout = connect_timeout
        # Jitter spreads reconnecting clients apart; seeded by peer so a run is repeatable.
        self._rng = random.Random(f"{role}:{peer_id}")
        self._received_upto = cursor
        self._acked = cursor
        self._pending: dict[str, _Pending] = {}
        self._serial = 0
        self._wake = trio.Event()
        # Bounded, the reader waits for the consumer before it asks for the next page: a
        # backlog waits on the server, not in this process's memory.
        self._send_messages, self.messages = trio.open_memory_channel[Received](
            float("inf") if max_buffered is None else max_buffered
        )
        self.welcome: Welcome | None = None
        self._state: LinkState = "connecting"
        self._state_changed = trio.Event()
        self._connects = 0
        self._dropped = 0
        self._pings = 0
        self._last_error: str | None = None
        self._failure: LinkFailed | None = None

    # --- what the user calls -----------------------------------------------------------

    @property
    def state(self) -> LinkState:
        return self._state

    @property
    def failure(self) -> LinkFailed | None:
        """Why the server refused this client for good, once it has."""
        return self._failure

    def statistics(self) -> LinkStatistics:
        return LinkStatistics(
            state=self._state,
            connects=self._connects,
            received_upto=self._received_upto,
            acked=self._acked,
            pending_submits=len(self._pending),
            dropped_redeliveries=self._dropped,
            last_error=self._last_error,
            pings_sent=self._pings,
        )

    async def wait_state(self, *states: LinkState) -> None:
        """Until the link is in one of `states` (raises `LinkFailed` if it failed)."""
        while self._state not in states:
            if self._failure is not None:
                raise self._failure
            await self._state_changed.wait()

    def enqueue(
        self, message: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> Submission:
        """Queues one message for submission now, in call order; `await sub.verdict()`.

        The key defaults to the envelope id (§4.5). The item is resent after every reconnect
        until its verdict arrives; the server accepts it exactly once."""
        key = idempotency_key or str(message.get("id", ""))
        if self._failure is not None:
            raise self._failure
        if key in self._pending:
            raise ValueError(f"idempotency key {key!r} is already waiting for its verdict")
        text = encode_frame(
            Submit(frame="submit", idempotency_key=key, message=dict(message))
        ).decode()
        if len(text.encode()) > MAX_SUBMIT_BYTES:
            # Every server takes this much (`welcome.max_frame_bytes` is never less); a
            # larger frame would end the session for every queued item, not just this one.
            raise ContractError(Code.TOO_LARGE, f"message over {MAX_ENVELOPE_BYTES} bytes")
        self._serial += 1
        pending = _Pending(self._serial, key, text, trio.Event())
        self._pending[key] = pending  # insertion order is enqueue order
        self._wake.set()
        return Submission(pending)

    async def submit(
        self, message: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> SubmitResult:
        """`enqueue` and wait for the verdict, however many reconnects it takes."""
        return await self.enqueue(message, idempotency_key=idempotency_key).verdict()

    def ack(self, cursor: int) -> None:
        """Everything up to `cursor` is durably processed: tell the server (cumulative)."""
        if cursor > self._acked:
            self._acked = cursor
            self._wake.set()

    # --- the connection loop -----------------------------------------------------------

    def _set_state(self, state: LinkState) -> None:
        if state != self._state:
            self._state = state
            self._state_changed.set()
            self._state_changed = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connects, and reconnects after every loss, until cancelled or refused for good."""
        task_status.started()
        delay = self._backoff[0]
        try:
            while True:
                self._set_state("connecting")
                try:
                    await self._connect_once()
                except LinkFailed:
                    raise
                except (
                    OSError,
                    trio_websocket.HandshakeError,
                    trio_websocket.ConnectionClosed,
                    trio.BrokenResourceError,
                    trio.ClosedResourceError,
                    trio.TooSlowError,
                    _ConnectionLost,
                    ContractError,
                ) as exc:
                    self._last_error = f"{type(exc).__name__}: {exc}"
                    log.debug("link to %s lost: %s", self.url, self._last_error)
                if self.welcome is not None:  # the last attempt got in: start over
                    delay = self._backoff[0]
                    self.welcome = None
                self._set_state("backoff")
                await trio.sleep(delay * (0.5 + self._rng.random()))
                delay = min(delay * 2, self._backoff[1])
        except LinkFailed as failure:
            self._fail(failure)
            raise

    def _fail(self, failure: LinkFailed) -> None:
        self._failure = failure
        self._last_error = str(failure)
        for pending in self._pending.values():
            pending.error = failure
            pending.done.set()
        self._pending.clear()
        self._send_messages.close()  # a reader waiting for more learns it from `failure`
        self._set_state("failed")

    async def _connect_once(self) -> None:
        async with open_websocket(
            self.url,
            connect_timeout=self._connect_timeout,
            receive_buffer_size=_RECEIVE_BUFFER,
            message_queue_size=4,
        ) as ws:
            connection = _Connection(self, ws)
            try:
                await connection.run()
            except trio_websocket.ConnectionClosed as exc:
                code = exc.reason.code if exc.reason is not None else None
                if code in _DEFINITE_CLOSE:
                    raise LinkFailed(_DEFINITE_CLOSE[code], f"closed with {code}") from None
                raise


class _Connection:
    """One WebSocket's worth of the link: handshake, then reader, writer and heartbeat."""

    def __init__(self, link: Link, ws: trio_websocket.WebSocketConnection) -> None:
        self._link = link
        self._ws = ws
        self._sent_serial = 0  # every pending item up to this one went out on this connection
        self._acked_sent = -1
        self._last_sent = trio.current_time()
        self._last_received = trio.current_time()
        self._nonce = 0
        self._interval = 15.0
        self._timed_out = False
        # The heartbeat sleeps in this scope until the next thing it must do; a frame sent
        # or received moves that time on, so an answered ping from the server costs the
        # heartbeat no wake-up of its own.
        self._heartbeat_due = trio.CancelScope()

    def _due(self) -> float:
        """When the heartbeat must act: give up, or ping."""
        return min(
            self._last_received + 3 * self._interval,
            self._last_sent + self._interval * PING_SLACK,
        )

    async def _send(self, frame: Frame | str) -> None:
        text = frame if isinstance(frame, str) else encode_frame(frame).decode()
        await self._ws.send_message(text)
        self._last_sent = trio.current_time()
        self._heartbeat_due.deadline = self._due()

    async def _receive(self) -> Frame | StreamFrame:
        raw = await self._ws.get_message()
        self._last_received = trio.current_time()
        self._heartbeat_due.deadline = self._due()
        if self._link._raw_messages:
            stream = read_stream_frame(raw)
            if stream is not None:
                return stream
        return validate_frame(raw, sent_by="server")

    async def run(self) -> None:
        link = self._link
        await self._send(link._hello)
        with trio.fail_after(link._connect_timeout):
            first = await self._receive()
        if isinstance(first, ErrorFrame):
            raise self._failure(first)
        if not isinstance(first, Welcome):
            raise _ConnectionLost(f"expected welcome, got {first.frame}")
        link.welcome = first
        link._connects += 1
        self._interval = first.heartbeat_interval_ms / 1000
        if link._receive:
            link._set_state("syncing")
            await self._send(Sync(frame="sync", cursor=link._received_upto, limit=self._limit()))
        else:
            link._set_state("live")
        try:
            await self._converse()
        except trio_websocket.ConnectionClosed:
            if self._timed_out:
                raise _ConnectionLost("no frame for three heartbeat intervals") from None
            raise

    async def _converse(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._quietly, self._writer)
                nursery.start_soon(self._quietly, self._heartbeat)
                try:
                    await self._reader()
                finally:
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # only the reader raises: its one error
            if len(group.exceptions) != 1:
                raise
            error = group.exceptions[0]
            raise error from error.__cause__

    @staticmethod
    async def _quietly(task: Callable[[], Awaitable[None]]) -> None:
        """A helper task ends quietly with the connection; the reader reports the loss."""
        with contextlib.suppress(trio_websocket.ConnectionClosed, trio.BrokenResourceError):
            await task()

    def _limit(self) -> int:
        welcome = self._link.welcome
        return min(self._link._sync_limit, welcome.max_batch_items if welcome else 1)

    def _failure(self, error: ErrorFrame) -> LinkFailed | _ConnectionLost:
        if error.code in (Code.UNAUTHORIZED, Code.UNSUPPORTED_VERSION) or error.fatal:
            return LinkFailed(error.code, error.detail, error.supported_versions)
        return _ConnectionLost(f"{error.code}: {error.detail}")

    async def _reader(self) -> None:
        link = self._link
        while True:
            frame = await self._receive()
            if isinstance(frame, StreamFrame):  # a batch or deliver read shallowly
                for seq, message, text in frame.items:
                    await self._pass_on(seq, message, text)
                if frame.frame == "batch" and frame.items:
                    sync = Sync(frame="sync", cursor=link._received_upto, limit=self._limit())
                    await self._send(sync)
            elif isinstance(frame, Batch):
                for item in frame.items:
                    await self._pass_on(item.seq, item.message)
                if frame.items:  # see the module docstring: the end is told by backlog_end
                    sync = Sync(frame="sync", cursor=link._received_upto, limit=self._limit())
                    await self._send(sync)
            elif isinstance(frame, BacklogEnd):
                link._set_state("live")
            elif isinstance(frame, Deliver):
                await self._pass_on(frame.seq, frame.message)
            elif isinstance(frame, SubmitResult):
                pending = link._pending.pop(frame.idempotency_key, None)
                if pending is not None:  # else: a duplicated frame, already answered
                    pending.result = frame
                    pending.done.set()
            elif isinstance(frame, Ping):
                await self._send(Pong(frame="pong", nonce=frame.nonce))
            elif isinstance(frame, ErrorFrame):
                failure = self._failure(frame)
                if isinstance(failure, LinkFailed):
                    raise failure
                link._last_error = str(failure)
            # `pong` and a duplicated `welcome` need nothing.

    async def _pass_on(self, seq: int, message: dict[str, Any], text: str | None = None) -> None:
        link = self._link
        if seq <= link._received_upto:
            link._dropped += 1
            return
        await link._send_messages.send(Received(seq, message, text))
        # Only once it is passed on: a send cut short by a lost connection is synced again.
        link._received_upto = seq

    async def _writer(self) -> None:
        """Submits without a verdict on this connection, in order; then the latest ack."""
        link = self._link
        while True:
            link._wake = trio.Event()
            unsent = []
            for key in reversed(link._pending):  # the new ones are at the end
                pending = link._pending[key]
                if pending.serial <= self._sent_serial:
                    break
                unsent.append(pending)
            for pending in reversed(unsent):
                await self._send(pending.text)
                self._sent_serial = pending.serial
            if link._acked > self._acked_sent and link._receive:
                self._acked_sent = link._acked
                await self._send(Ack(frame="ack", cursor=link._acked))
            await link._wake.wait()

    async def _heartbeat(self) -> None:
        """§3.2: ping after an idle interval (and a quarter: `PING_SLACK`); give up after
        three silent ones (4408)."""
        while True:
            now = trio.current_time()
            if now - self._last_received >= 3 * self._interval:
                self._timed_out = True
                with trio.move_on_after(1):
                    await self._ws.aclose(4408, "no frame for three heartbeat intervals")
                return
            if now - self._last_sent >= self._interval * PING_SLACK:
                self._nonce += 1
                await self._send(Ping(frame="ping", nonce=self._nonce))
                self._link._pings += 1
                continue
            with trio.CancelScope(deadline=self._due()) as self._heartbeat_due:
                await trio.sleep_forever()
