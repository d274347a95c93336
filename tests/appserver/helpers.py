"""Envelopes, a raw frame-level client and a runtime-side `Link`, for the AppServer tests."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import trio
import trio_websocket

from contracts import (
    ContractError,
    Frame,
    new_message_id,
    utc_timestamp,
    validate_frame,
)
from link import Link, Received, open_websocket
from peers.appserver import AppServer

TIMEOUT = 10.0


def envelope(
    type_: str,
    payload: dict[str, Any],
    *,
    conversation: str = "conv-1",
    sender: tuple[str, str] = ("user", "alice"),
    target: tuple[str, str] = ("runtime", "chat"),
    correlation: dict[str, Any] | None = None,
    message_id: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "v": 1,
        "id": message_id or new_message_id(),
        "type": type_,
        "timestamp": utc_timestamp(),
        "sender": {"kind": sender[0], "id": sender[1]},
        "target": {"kind": target[0], "app_scope": target[1]},
        "scope": {"app_scope": target[1], "conversation_id": conversation},
        "payload": payload,
    }
    if correlation:
        message["correlation"] = correlation
    return message


def user_text(text: str, *, conversation: str = "conv-1") -> dict[str, Any]:
    return envelope("lineup.message", {"text": text, "format": "plain"}, conversation=conversation)


def agent_text(text: str, *, conversation: str = "conv-1", agent: str = "demo") -> dict[str, Any]:
    return envelope(
        "lineup.message",
        {"text": text, "format": "plain"},
        conversation=conversation,
        sender=("agent", agent),
        target=("app", "chat"),
    )


def user_answer(interaction_id: str, kind: str, conversation: str, **answer: Any) -> dict[str, Any]:
    return envelope(
        "lineup.interaction.response",
        {"interaction_id": interaction_id, "kind": kind, **answer},
        conversation=conversation,
    )


def inventory(revision: str, *, conversation: str = "conv-1") -> dict[str, Any]:
    return envelope(
        "lineup.inventory",
        {"revision": revision, "tools": [], "apps": [], "components": [], "capabilities": []},
        conversation=conversation,
        sender=("runtime", "runtime:tool_router"),
        target=("runtime", "runtime"),
        correlation={"inventory_revision": revision},
    )


def message_of(received: Received) -> dict[str, Any]:
    return received.message


def text_of(message: dict[str, Any]) -> str:
    return str(message["payload"]["text"])


@dataclass
class RawClient:
    """Frames in and out, nothing else: for the handshake and the exact wire behaviour."""

    ws: trio_websocket.WebSocketConnection
    frames: list[Frame] = field(default_factory=list)

    async def send(self, frame: dict[str, Any] | str | bytes) -> None:
        text = frame if isinstance(frame, str | bytes) else json.dumps(frame)
        await self.ws.send_message(text)

    async def receive(self) -> Frame:
        with trio.fail_after(TIMEOUT):
            raw = await self.ws.get_message()
        frame = validate_frame(raw, sent_by="server")
        self.frames.append(frame)
        return frame

    async def receive_kind(self, kind: str) -> Frame:
        """The next frame of `kind`, answering pings and skipping nothing else."""
        while True:
            frame = await self.receive()
            if frame.frame == "ping" and kind != "ping":
                await self.send({"frame": "pong", "nonce": frame.nonce})
                continue
            assert frame.frame == kind, frame
            return frame

    async def hello(
        self,
        token: str,
        *,
        role: str = "runtime",
        peer_id: str = "laptop",
        versions: list[int] | None = None,
    ) -> Frame:
        await self.send(
            {
                "frame": "hello",
                "protocol_versions": versions or [1],
                "role": role,
                "peer_id": peer_id,
                "token": token,
            }
        )
        return await self.receive()

    async def submit(self, message: dict[str, Any], key: str | None = None) -> Frame:
        await self.send(
            {"frame": "submit", "idempotency_key": key or message["id"], "message": message}
        )
        return await self.receive_kind("submit_result")

    async def close_code(self) -> int | None:
        """Reads until the server closes; the close code it sent."""
        with trio.fail_after(TIMEOUT):
            while True:
                try:
                    raw = await self.ws.get_message()
                except trio_websocket.ConnectionClosed as closed:
                    return None if closed.reason is None else closed.reason.code
                with contextlib.suppress(ContractError):
                    self.frames.append(validate_frame(raw, sent_by="server"))


@contextlib.asynccontextmanager
async def raw_client(url: str) -> AsyncIterator[RawClient]:
    async with open_websocket(url, max_message_size=4 << 20) as ws:
        yield RawClient(ws)


@contextlib.asynccontextmanager
async def runtime_link(
    server: AppServer, *, peer_id: str = "laptop", cursor: int = 0, **options: Any
) -> AsyncIterator[Link]:
    """A `Link` playing the runtime, running for the block's duration."""
    link = Link(
        server.url,
        role="runtime",
        peer_id=peer_id,
        token=server.credentials.runtime_token,
        cursor=cursor,
        backoff_initial=0.01,
        backoff_max=0.1,
        **options,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(link.run)
        yield link
        nursery.cancel_scope.cancel()


async def collect(
    link: Link, count: int, *, keep: Callable[[dict[str, Any]], bool] = lambda _m: True
) -> list[Received]:
    """The next `count` messages `keep` accepts, acknowledging as they come."""
    got: list[Received] = []
    with trio.fail_after(TIMEOUT * 3):
        while len(got) < count:
            received = await link.messages.receive()
            link.ack(received.seq)
            if keep(received.message):
                got.append(received)
    return got
