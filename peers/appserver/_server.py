"""`AppServer`: listens on loopback (or wherever told), one `Session` per WebSocket.

The server owns its data dir: a lock file keeps a second server out (the stream's numbers
are assigned in memory), `credentials.json` holds the tokens and `appserver.db` the
conversations, the stream and the verdicts.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

import trio
import trio_websocket

from contracts import (
    MAX_BATCH_ITEMS,
    MAX_FRAME_BYTES,
    replace_file,
)

from ._admission import Admission
from ._core import Limits, ServerCore
from ._credentials import DEFAULT_AGENT_ID, Credentials, check_agent_id, ensure_credentials
from ._faults import Faults
from ._session import Session
from ._store import STORE_FILE, Store

log = logging.getLogger("lineup.appserver")

ENDPOINT_PATH: Final = "/v1/ws"
LOCK_FILE: Final = "appserver.lock"
ENDPOINT_FILE: Final = "endpoint.json"
_RECEIVE_BUFFER: Final = 64 * 1024
_HANDSHAKE_TIMEOUT_S: Final = 10.0


class DataDirInUse(RuntimeError):
    """Another AppServer already serves this data dir."""


@dataclass(frozen=True, slots=True)
class AppServerStatistics:
    """A snapshot for tests and `lineup debug`: what the server holds and what it has done."""

    port: int | None
    sessions: int
    last_seq: int
    conversations: int
    connections: int
    connections_dropped: int
    frames_sent: int
    frames_received: int
    frames_duplicated: int
    heartbeat_timeouts: int
    pings_sent: int
    unauthorized: int
    accepted: int
    duplicates: int
    rejected: int


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[IO[str]]:
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with (data_dir / LOCK_FILE).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirInUse(f"another AppServer is using {data_dir}") from None
        yield handle


class AppServer:
    """The reference AppServer of docs/protocol.md, for `lineup run`, tests and benchmarks.

    ```python
    server = AppServer(tmp / "appserver", drop_every=7)
    port = await nursery.start(server.serve)
    server.url              # ws://127.0.0.1:<port>/v1/ws
    server.credentials      # the runtime token and the agents' tokens
    ```

    `agents` are the agent ids that get a token (the first is the default agent, associated
    with conversations the runtime opens). The fault options are those of `Faults`;
    `server.faults` may be replaced while it runs.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        agents: Iterable[str] = (DEFAULT_AGENT_ID,),
        heartbeat_interval_ms: int = 15_000,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        max_batch_items: int = MAX_BATCH_ITEMS,
        max_unacked: int = 1024,
        drop_every: int | None = None,
        duplicate_every: int | None = None,
        delay_ms: float = 0.0,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ValueError("`port` must be within 0 … 65535")
        self.data_dir = Path(data_dir)
        self.host = host
        self._requested_port = port
        self.agents = tuple(check_agent_id(agent) for agent in agents)
        if not self.agents:
            raise ValueError("`agents` must name at least one agent")
        self.limits = Limits(heartbeat_interval_ms, max_frame_bytes, max_batch_items, max_unacked)
        self._faults = Faults(drop_every, duplicate_every, delay_ms)
        self._core: ServerCore | None = None
        self.port: int | None = None

    @property
    def faults(self) -> Faults:
        return self._faults

    @faults.setter
    def faults(self, faults: Faults) -> None:
        self._faults = faults
        if self._core is not None:
            self._core.faults = faults

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the AppServer is not serving yet")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}{ENDPOINT_PATH}"

    @property
    def credentials(self) -> Credentials:
        if self._core is None:
            raise RuntimeError("the AppServer is not serving yet")
        return self._core.credentials

    def statistics(self) -> AppServerStatistics:
        core = self._core
        if core is None:
            return AppServerStatistics(None, 0, 0, 0, *([0] * 11))
        counters = core.counters
        return AppServerStatistics(
            port=self.port,
            sessions=len(core.sessions),
            last_seq=core.store.last_seq,
            conversations=core.store.conversation_count(),
            connections=counters.connections,
            connections_dropped=counters.connections_dropped,
            frames_sent=counters.frames_sent,
            frames_received=counters.frames_received,
            frames_duplicated=counters.frames_duplicated,
            heartbeat_timeouts=counters.heartbeat_timeouts,
            pings_sent=counters.pings_sent,
            unauthorized=counters.unauthorized,
            accepted=counters.accepted,
            duplicates=counters.duplicates,
            rejected=counters.rejected,
        )

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Serves until cancelled; `await nursery.start(server.serve)` returns the port."""
        with _locked(self.data_dir):
            credentials = ensure_credentials(self.data_dir, agents=self.agents)
            store = Store(self.data_dir / STORE_FILE)
            try:
                self._core = ServerCore(
                    store,
                    Admission(store, default_agent=credentials.agent_id),
                    credentials,
                    self.limits,
                    self._faults,
                )
                listeners = await trio.open_tcp_listeners(self._requested_port, host=self.host)
                for extra in listeners[1:]:  # `localhost` may bind v4 and v6 on different ports
                    await extra.aclose()
                listener = listeners[0]
                self.port = int(listener.socket.getsockname()[1])
                async with trio.open_nursery() as nursery:
                    await nursery.start(trio.serve_listeners, self._handle, [listener])
                    log.info("AppServer listening on %s", self.url)
                    task_status.started(self.port)
            finally:
                self.port = None
                self._core = None
                store.close()

    async def _handle(self, stream: trio.SocketStream) -> None:
        core = self._core
        assert core is not None
        core.counters.connections += 1
        try:
            async with trio.open_nursery() as nursery:
                try:
                    await self._connection(nursery, stream, core)
                finally:
                    nursery.cancel_scope.cancel()
        except Exception as exc:  # one connection's failure never stops the server
            log.debug("connection ended: %r", exc)
        finally:
            await trio.aclose_forcefully(stream)

    async def _connection(
        self, nursery: trio.Nursery, stream: trio.SocketStream, core: ServerCore
    ) -> None:
        with trio.move_on_after(_HANDSHAKE_TIMEOUT_S) as handshake:
            request = await trio_websocket.wrap_server_stream(
                nursery,
                stream,
                message_queue_size=4,
                # Frames up to 4x the limit are read and refused with `too_large` (§3.1);
                # anything larger is closed by the library with 1009.
                max_message_size=4 * core.limits.max_frame_bytes,
                receive_buffer_size=_RECEIVE_BUFFER,
            )
            if request.path.split("?")[0] != ENDPOINT_PATH:
                await request.reject(404, body=b"the LineUp endpoint is " + ENDPOINT_PATH.encode())
                return
            ws = await request.accept()
        if handshake.cancelled_caught:
            return
        try:
            await Session(core, ws, stream).run()
        finally:
            with trio.move_on_after(1):
                await ws.aclose()


def write_endpoint(data_dir: Path, url: str) -> Path:
    """Records where the server listens, for `lineup agent … --data-dir DIR`."""
    path = Path(data_dir) / ENDPOINT_FILE
    replace_file(path, json.dumps({"url": url, "pid": os.getpid()}) + "\n", mode=0o644)
    return path


def read_endpoint(data_dir: Path) -> str | None:
    """The URL an AppServer serving `data_dir` recorded, if any."""
    try:
        data = json.loads((Path(data_dir) / ENDPOINT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    url = data.get("url") if isinstance(data, dict) else None
    return url if isinstance(url, str) else None
