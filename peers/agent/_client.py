"""`AgentClient`: what an agent author needs, on top of a `Link` with role `agent` (§5).

An agent receives, in the conversations it belongs to, the users' messages and answers, the
runtime's inventory revisions and its tool calls' receipts and results; it sends messages,
task progress, interaction requests and tool calls. Every envelope is built here with
`sender: {kind: agent, id: <agent id>}` and checked by `validate_envelope` before it leaves,
so a mistake is a `ContractError` at the call site, not a rejection later.

Received messages count as processed when the caller asks for the next one (`receive()`),
or says so (`processed()`): only then does the cursor advance, get saved in `state_dir`
and acknowledged. A crash in between re-delivers the message after the restart; a handler
that derives its reply ids from the message (`derive_message_id`) then re-sends the same ids
and the AppServer's dedup keeps the conversation unchanged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import trio

from actors.contracts import (
    RUNTIME_GLOBAL_CONVERSATION,
    ContractError,
    Inventory,
    RuntimeEnvelope,
    Sender,
    SubmitResult,
    new_message_id,
    parse_payload,
    utc_timestamp,
    validate_envelope,
    validate_message,
)
from link import Link, LinkStatistics, Received, Submission

log = logging.getLogger("lineup.agent")

CURSOR_FILE = "cursor.json"
TaskStatus = Literal["pending", "running", "succeeded", "failed", "cancelled"]


class AgentError(Exception):
    """Something the agent asked for cannot be done (see the message)."""


class SubmitRejected(AgentError):
    """The AppServer refused a message for good, with a code of the contracts."""

    def __init__(self, message_id: str, code: str, detail: str) -> None:
        super().__init__(f"{message_id} rejected: {code}: {detail}")
        self.message_id = message_id
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class AgentMessage:
    """A received message: its stream number and its canonical envelope."""

    seq: int
    envelope: RuntimeEnvelope

    @property
    def id(self) -> str:
        return self.envelope.id

    @property
    def type(self) -> str:
        return self.envelope.type

    @property
    def conversation_id(self) -> str:
        return self.envelope.scope.conversation_id

    @property
    def sender(self) -> Sender:
        return self.envelope.sender

    def payload(self) -> Any:
        """The payload as its typed model (e.g. `ChatMessage` for `lineup.message`)."""
        return parse_payload(self.envelope)


@dataclass(frozen=True, slots=True)
class Sent:
    """An accepted message: its id, its number in the stream, and whether it was accepted
    before (the same id or key submitted again)."""

    message_id: str
    seq: int
    duplicate: bool = False
    interaction_id: str | None = None
    call_id: str | None = None


def _read_cursor(state_dir: Path | None) -> int:
    if state_dir is None:
        return 0
    try:
        value = json.loads((state_dir / CURSOR_FILE).read_text(encoding="utf-8"))["cursor"]
    except FileNotFoundError:
        return 0
    except (OSError, ValueError, KeyError, TypeError):
        raise AgentError(f"{state_dir / CURSOR_FILE}: unreadable cursor file") from None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise AgentError(f"{state_dir / CURSOR_FILE}: unreadable cursor file")
    return value


class AgentClient:
    """An agent's connection to the AppServer.

    ```python
    async with open_agent(url, agent_id="demo", token=token, state_dir=path) as agent:
        while True:
            message = await agent.receive()
            if message.type == "lineup.message" and message.sender.kind == "user":
                await agent.send_markdown(message.conversation_id, "**Hi!**", reply_to=message.id)
    ```

    `state_dir` keeps the cursor between runs (none: start from the beginning each time);
    `include_own` passes the agent's own messages through `receive()` too.
    """

    def __init__(
        self,
        url: str,
        *,
        agent_id: str,
        token: str,
        state_dir: Path | None = None,
        receive: bool = True,
        include_own: bool = False,
        backoff_initial: float = 0.05,
        backoff_max: float = 5.0,
        connect_timeout: float = 10.0,
    ) -> None:
        try:
            Sender(kind="agent", id=agent_id)
        except ValueError:
            raise ValueError(f"{agent_id!r} is not a valid agent id") from None
        self.agent_id = agent_id
        self.state_dir = None if state_dir is None else Path(state_dir)
        self._cursor = _read_cursor(self.state_dir)
        self._include_own = include_own
        self.link = Link(
            url,
            role="agent",
            peer_id=agent_id,
            token=token,
            cursor=self._cursor,
            receive=receive,
            client_name="lineup-agent",
            backoff_initial=backoff_initial,
            backoff_max=backoff_max,
            connect_timeout=connect_timeout,
        )
        self._current: int | None = None  # handed out, not yet processed
        self._inventories: dict[str, Inventory] = {}

    # --- connection --------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keeps the connection up until cancelled (`LinkFailed` if refused for good)."""
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        await self.link.run(task_status=task_status)

    async def wait_live(self) -> None:
        """Until the backlog is read and live delivery has begun (or, send-only, connected)."""
        await self.link.wait_state("live")

    @property
    def cursor(self) -> int:
        """The highest seq processed (and saved, with a `state_dir`)."""
        return self._cursor

    def statistics(self) -> LinkStatistics:
        return self.link.statistics()

    # --- receiving ---------------------------------------------------------------------

    async def receive(self) -> AgentMessage:
        """The next message for this agent, in stream order, each once. Asking for the next
        one marks the previous one processed."""
        self._finish_current()
        while True:
            try:
                received = await self.link.messages.receive()
            except trio.EndOfChannel:
                raise self.link.failure or AgentError("the connection has ended") from None
            message = self._accept(received)
            if message is None:
                self._advance(received.seq)
                continue
            self._current = received.seq
            return message

    def processed(self, message: AgentMessage) -> None:
        """Marks `message` (and everything before it) processed now."""
        if self._current is not None and message.seq >= self._current:
            self._current = None
        self._advance(message.seq)

    def inventory(self, conversation_id: str) -> Inventory | None:
        """The latest inventory the runtime published for the conversation (or for all)."""
        return self._inventories.get(conversation_id) or self._inventories.get(
            RUNTIME_GLOBAL_CONVERSATION
        )

    def _accept(self, received: Received) -> AgentMessage | None:
        try:
            envelope = validate_message(received.message)
        except ContractError as exc:  # the server checked it; a newer peer's type, maybe
            log.warning("seq %d skipped: %s", received.seq, exc)
            return None
        if envelope.type == "lineup.inventory":
            inventory = parse_payload(envelope)
            known = self._inventories.get(envelope.scope.conversation_id)
            if known is None or int(inventory.revision) >= int(known.revision):
                self._inventories[envelope.scope.conversation_id] = inventory
        own = envelope.sender.kind == "agent" and envelope.sender.id == self.agent_id
        if own and not self._include_own:
            return None
        return AgentMessage(received.seq, envelope)

    def _finish_current(self) -> None:
        if self._current is not None:
            seq, self._current = self._current, None
            self._advance(seq)

    def _advance(self, seq: int) -> None:
        if seq <= self._cursor:
            return
        self._cursor = seq
        if self.state_dir is not None:
            path = self.state_dir / CURSOR_FILE
            tmp = path.with_name(f".{CURSOR_FILE}.tmp")
            tmp.write_text(json.dumps({"cursor": seq}) + "\n", encoding="utf-8")
            os.replace(tmp, path)
        self.link.ack(seq)

    # --- sending -----------------------------------------------------------------------

    def envelope(
        self,
        type_: str,
        conversation_id: str,
        payload: Mapping[str, Any],
        *,
        app_scope: str = "chat",
        target_kind: Literal["app", "runtime"] = "app",
        reply_to: str | None = None,
        call_id: str | None = None,
        inventory_revision: str | None = None,
        message_id: str | None = None,
    ) -> dict[str, Any]:
        """A checked envelope from this agent (`ContractError` if it breaks the contract)."""
        correlation = {
            key: value
            for key, value in (
                ("reply_to", reply_to),
                ("call_id", call_id),
                ("inventory_revision", inventory_revision),
            )
            if value is not None
        }
        raw: dict[str, Any] = {
            "v": 1,
            "id": message_id or new_message_id(),
            "type": type_,
            "timestamp": utc_timestamp(),
            "sender": {"kind": "agent", "id": self.agent_id},
            "target": {"kind": target_kind, "app_scope": app_scope},
            "scope": {"app_scope": app_scope, "conversation_id": conversation_id},
            "payload": dict(payload),
        }
        if correlation:
            raw["correlation"] = correlation
        return validate_envelope(raw).to_dict()

    def enqueue(self, envelope: Mapping[str, Any]) -> Submission:
        """Queues a built envelope without waiting (many in a row keep their order)."""
        return self.link.enqueue(envelope)

    async def submit(self, envelope: Mapping[str, Any]) -> SubmitResult:
        """Submits a built envelope and returns the verdict as is (accepted or rejected)."""
        return await self.link.submit(envelope)

    async def _send(self, envelope: dict[str, Any], **extra: str | None) -> Sent:
        result = await self.submit(envelope)
        if result.status != "accepted" or result.seq is None:
            raise SubmitRejected(envelope["id"], str(result.code), result.detail or "")
        return Sent(envelope["id"], result.seq, result.duplicate, **extra)

    async def send_text(
        self,
        conversation_id: str,
        text: str,
        *,
        format: Literal["plain", "markdown"] = "plain",
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """A chat message (`lineup.message`), plain text unless told otherwise."""
        payload = {"text": text, "format": format}
        return await self._send(
            self.envelope(
                "lineup.message",
                conversation_id,
                payload,
                reply_to=reply_to,
                message_id=message_id,
            )
        )

    async def send_markdown(
        self,
        conversation_id: str,
        text: str,
        *,
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """A chat message in Markdown (rendered safely by the chat: no raw HTML)."""
        return await self.send_text(
            conversation_id, text, format="markdown", reply_to=reply_to, message_id=message_id
        )

    async def send_task_progress(
        self,
        conversation_id: str,
        task_id: str,
        status: TaskStatus,
        *,
        percent: int | None = None,
        label: str | None = None,
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """How a task the agent runs is going (`lineup.task.progress`)."""
        payload: dict[str, Any] = {"task_id": task_id, "status": status}
        if percent is not None:
            payload["percent"] = percent
        if label is not None:
            payload["label"] = label
        return await self._send(
            self.envelope(
                "lineup.task.progress",
                conversation_id,
                payload,
                reply_to=reply_to,
                message_id=message_id,
            )
        )

    async def _ask(
        self,
        conversation_id: str,
        payload: dict[str, Any],
        interaction_id: str | None,
        reply_to: str | None,
        message_id: str | None,
    ) -> Sent:
        message_id = message_id or new_message_id()
        payload["interaction_id"] = interaction_id or f"ask-{message_id}"
        envelope = self.envelope(
            "lineup.interaction.request",
            conversation_id,
            payload,
            reply_to=reply_to,
            message_id=message_id,
        )
        return await self._send(envelope, interaction_id=payload["interaction_id"])

    async def ask_choice(
        self,
        conversation_id: str,
        prompt: str,
        options: Mapping[str, str] | Sequence[tuple[str, str]],
        *,
        multiple: bool = False,
        interaction_id: str | None = None,
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """Asks the user to pick among `options` (option id → label); the answer comes back
        as `lineup.interaction.response` with the same `interaction_id`."""
        pairs = options.items() if isinstance(options, Mapping) else options
        payload: dict[str, Any] = {
            "kind": "choice",
            "prompt": prompt,
            "options": [{"id": key, "label": label} for key, label in pairs],
        }
        if multiple:
            payload["multiple"] = True
        return await self._ask(conversation_id, payload, interaction_id, reply_to, message_id)

    async def ask_confirm(
        self,
        conversation_id: str,
        prompt: str,
        *,
        confirm_label: str | None = None,
        cancel_label: str | None = None,
        interaction_id: str | None = None,
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """Asks a yes-or-no question."""
        payload: dict[str, Any] = {"kind": "confirm", "prompt": prompt}
        if confirm_label is not None:
            payload["confirm_label"] = confirm_label
        if cancel_label is not None:
            payload["cancel_label"] = cancel_label
        return await self._ask(conversation_id, payload, interaction_id, reply_to, message_id)

    async def ask_input(
        self,
        conversation_id: str,
        prompt: str,
        *,
        placeholder: str | None = None,
        multiline: bool = False,
        interaction_id: str | None = None,
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """Asks for free text."""
        payload: dict[str, Any] = {"kind": "input", "prompt": prompt}
        if placeholder is not None:
            payload["placeholder"] = placeholder
        if multiline:
            payload["multiline"] = True
        return await self._ask(conversation_id, payload, interaction_id, reply_to, message_id)

    async def invoke_tool(
        self,
        conversation_id: str,
        app_scope: str,
        method: str,
        arguments: Mapping[str, Any],
        *,
        contract_version: str = "1",
        inventory_revision: str | None = None,
        call_id: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """Calls a tool of the inventory (`lineup.tool.invoke`, §5). The revision defaults
        to the latest inventory received for the conversation; receipts and the one final
        result arrive through `receive()` with the returned `call_id`."""
        if inventory_revision is None:
            inventory = self.inventory(conversation_id)
            if inventory is None:
                raise AgentError(
                    f"no inventory received for {conversation_id!r}: pass inventory_revision"
                )
            inventory_revision = inventory.revision
        message_id = message_id or new_message_id()
        call_id = call_id or f"call_{message_id}"
        payload = {
            "method": method,
            "contract_version": contract_version,
            "arguments": dict(arguments),
        }
        envelope = self.envelope(
            "lineup.tool.invoke",
            conversation_id,
            payload,
            app_scope=app_scope,
            target_kind="runtime",
            call_id=call_id,
            inventory_revision=inventory_revision,
            message_id=message_id,
        )
        return await self._send(envelope, call_id=call_id)


@contextlib.asynccontextmanager
async def open_agent(
    url: str, *, agent_id: str, token: str, **options: Any
) -> AsyncIterator[AgentClient]:
    """An `AgentClient` running in the background for the duration of the block."""
    client = AgentClient(url, agent_id=agent_id, token=token, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(client.run)
        try:
            yield client
        finally:
            nursery.cancel_scope.cancel()
