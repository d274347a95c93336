"""The independent history of a soak: what the agent and the user did, on their own disk.

`Recorder` wraps an `AgentClient` and appends one JSONL record for every message the agent
sends and every message it receives; `UiRecorder` appends one for every text the user types
through a UI session. They run in the process that drives the soak, never in the runtime,
and each line is flushed to disk (fsync) before the call that made it returns: the record
outlives any kill of the runtime, and says what each side did whatever the runtime
remembers.

Records (`t` is the wall-clock time in seconds; `order` counts the side's sends per
conversation, in the order they were made):

- `{"event": "sent", "conversation", "message_id", "type", "order", "seq", "text" |
  "call_id", "t"}`: the AppServer accepted it (`seq` is its number in the stream);
- `{"event": "unconfirmed", ...}` without `seq`: the send was cut short before the verdict
  (it may or may not have been accepted);
- `{"event": "rejected", ..., "code"}`: refused for good;
- `{"event": "received", "conversation", "message_id", "type", "seq", "sender": {"kind",
  "id"}, "call_id"?, "text"?, "t"}`: each message once, even when the stream delivers it
  again after a reconnection;
- `{"event": "typed", "conversation", "text", "order", "ui_id", "t"}` (`UiRecorder`): the
  host took the user's text (`ui_id`: the UI request's id); `unconfirmed` when the UI
  socket gave no answer.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import trio

from contracts import new_message_id

from ._client import TOOL_FINAL_TYPES, AgentClient, AgentMessage, SubmitRejected


class Journal:
    """An append-only JSONL file; every line is on disk before `write` returns."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()  # a UI session may type from worker threads

    def write(self, record: Mapping[str, Any]) -> None:
        line = json.dumps({**record, "t": round(time.time(), 3)}, separators=(",", ":"))
        with self._lock:
            os.write(self._fd, line.encode() + b"\n")
            os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _received(message: AgentMessage) -> dict[str, Any]:
    envelope = message.envelope
    record: dict[str, Any] = {
        "event": "received",
        "conversation": message.conversation_id,
        "message_id": message.id,
        "type": message.type,
        "seq": message.seq,
        "sender": {"kind": envelope.sender.kind, "id": envelope.sender.id},
    }
    if message.call_id is not None:
        record["call_id"] = message.call_id
    payload = envelope.payload
    if isinstance(payload, dict) and isinstance(payload.get("text"), str):
        record["text"] = payload["text"]
    return record


class Recorder:
    """An agent that records what it does: `send_text` and `call` send and record; `run()`
    reads everything the agent receives (a call's receipts and final outcome included)
    and records it. The client must keep an inbox (the default) and is read by `run()`
    alone.

    ```python
    async with open_agent(url, agent_id="demo", token=token) as client:
        recorder = Recorder(client, Path("agent.jsonl"))
        nursery.start_soon(recorder.run)
        await recorder.send_text("conv-1", "hello #1")
        call_id = await recorder.call("conv-1", "pomodoro.start", {"minutes": 1})
    ```
    """

    def __init__(self, client: AgentClient, path: Path) -> None:
        self.client = client
        self.journal = Journal(path)
        self._orders: Counter[str] = Counter()
        self._received_upto = 0  # re-deliveries after a reconnection are recorded once
        self._finals: dict[str, AgentMessage] = {}  # call id -> its final, until asked for
        self._final_seen: dict[str, trio.Event] = {}

    def _next_order(self, conversation: str) -> int:
        order = self._orders[conversation]
        self._orders[conversation] += 1
        return order

    async def _submit(self, envelope: dict[str, Any], record: dict[str, Any]) -> None:
        """Submits `envelope` and records the verdict (or that none came)."""
        try:
            result = await self.client.submit(envelope)
        except BaseException:
            self.journal.write({"event": "unconfirmed", **record})
            raise
        if result.status != "accepted" or result.seq is None:
            self.journal.write({"event": "rejected", **record, "code": str(result.code)})
            raise SubmitRejected(envelope["id"], str(result.code), result.detail or "")
        self.journal.write({"event": "sent", **record, "seq": result.seq})

    async def send_text(self, conversation: str, text: str) -> str:
        """Sends a plain chat message and records it; its message id. Texts should be
        distinct within a conversation: the checker finds copies by text too."""
        envelope = self.client.envelope(
            "lineup.message", conversation, {"text": text, "format": "plain"}
        )
        record = {
            "conversation": conversation,
            "message_id": envelope["id"],
            "type": "lineup.message",
            "order": self._next_order(conversation),
            "text": text,
        }
        await self._submit(envelope, record)
        return str(envelope["id"])

    async def call(
        self,
        conversation: str,
        method: str,
        arguments: Mapping[str, Any],
        app_scope: str | None = None,
    ) -> str:
        """Calls a tool of the conversation's latest inventory (as `AgentClient.call`) and
        records the call; its call id. Its receipts and final outcome are recorded by
        `run()` as they arrive."""
        message_id = new_message_id()
        call = self.client.call(
            conversation, method, arguments, app_scope=app_scope, message_id=message_id
        )
        record = {
            "conversation": conversation,
            "message_id": message_id,
            "type": "lineup.tool.invoke",
            "order": self._next_order(conversation),
            "call_id": call.call_id,
            "app_scope": call.app_scope,
            "method": method,
        }
        await self._submit(call.envelope, record)
        return call.call_id

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Records every received message until cancelled; a message counts as processed
        (and is acknowledged) only once its record is on disk."""
        task_status.started()
        while True:
            message = await self.client.receive()
            if message.seq > self._received_upto:
                self.journal.write(_received(message))
                self._received_upto = message.seq
                call_id = message.call_id
                if message.type in TOOL_FINAL_TYPES and call_id is not None:
                    self._finals.setdefault(call_id, message)
                    self._final_seen.pop(call_id, trio.Event()).set()

    async def final(self, call_id: str) -> AgentMessage:
        """The final outcome of a call made with `call`, once `run()` has recorded it (the
        first, if the stream brought several: the record has them all). Asked once per
        call, by one task."""
        if call_id not in self._finals:
            await self._final_seen.setdefault(call_id, trio.Event()).wait()
        return self._finals.pop(call_id)

    def close(self) -> None:
        self.journal.close()


class UiActor(Protocol):
    """What types for the user: `lineup.ui_session.UiSession` (its `act` returns the UI
    request's id, or raises when the UI socket gives no answer)."""

    def act(self, action: dict[str, Any], *, app_scope: str = ..., timeout: float = ...) -> str:
        """Sends one user action to an app's UI."""
        ...


class UiRecorder:
    """The user's side of the history: `type` sends a text into the chat through a UI
    session and records it. Blocking (the UI socket is), so call it from a worker thread
    inside trio. Texts should be distinct within a conversation."""

    def __init__(self, path: Path) -> None:
        self.journal = Journal(path)
        self._orders: Counter[str] = Counter()
        self._lock = threading.Lock()

    def type(self, session: UiActor, conversation: str, text: str, timeout: float = 10) -> str:
        """Types `text` into `conversation`'s chat; the UI request's id."""
        with self._lock:
            order = self._orders[conversation]
            self._orders[conversation] += 1
        record = {"conversation": conversation, "text": text, "order": order}
        action = {"kind": "send", "conversation_id": conversation, "text": text}
        try:
            ui_id = session.act(action, timeout=timeout)
        except BaseException:
            self.journal.write({"event": "unconfirmed", **record})
            raise
        self.journal.write({"event": "typed", **record, "ui_id": ui_id})
        return ui_id

    def close(self) -> None:
        self.journal.close()
