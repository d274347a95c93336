"""`AgentClient`: what an agent author needs, on top of a `Link` with role `agent` (§5).

An agent receives, in the conversations it belongs to, the users' messages and answers, the
runtime's inventory revisions and its tool calls' receipts and results; it sends messages,
task progress, interaction requests (and their withdrawals) and tool calls. Every envelope
is built here with `sender: {kind: agent, id: <agent id>}` and checked by
`validate_envelope` before it leaves, so a mistake is a `ContractError` at the call site,
not a rejection later.

One task (the dispatcher, started by `run()`) takes every received message off the link
in stream order: it keeps the latest inventory per conversation, hands each receipt and
result of a call made with `call()` to that call, and puts everything else in the inbox
that `receive()` reads. So any number of calls may be in flight at once, from any number of
tasks, while another task reads the inbox.

Received messages count as processed when the caller asks for the next one (`receive()`),
or says so (`processed()`); what the dispatcher hands to a call, or drops (the agent's own
messages), is processed as soon as it is taken. Only then does the cursor advance, get saved
in `state_dir` and acknowledged. A crash in between re-delivers the message after the
restart; a handler that derives its reply ids from the message (`derive_message_id`) then
re-sends the same ids and the AppServer's dedup keeps the conversation unchanged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import trio

from contracts import (
    RUNTIME_GLOBAL_CONVERSATION,
    ContractError,
    Inventory,
    InventoryTool,
    RuntimeEnvelope,
    Sender,
    SubmitResult,
    new_message_id,
    parse_payload,
    replace_file,
    utc_timestamp,
    validate_envelope,
    validate_message,
)
from link import Link, LinkStatistics, Received, Submission

log = logging.getLogger("lineup.agent")

CURSOR_FILE = "cursor.json"
# The latest inventory per conversation, kept beside the cursor: a restarted client that
# resumes past an inventory still knows what it may call.
INVENTORY_FILE = "inventories.json"
TaskStatus = Literal["pending", "running", "succeeded", "failed", "cancelled"]
# What the runtime sends back about a call (§6), and the two that end it.
TOOL_EVENT_TYPES: Final = frozenset(
    {
        "lineup.tool.accepted",
        "lineup.tool.starting",
        "lineup.tool.activation_ready",
        "lineup.tool.activation_failed",
        "lineup.tool.activation_cancelled",
        "lineup.tool.progress",
        "lineup.tool.result",
        "lineup.tool.error",
    }
)
TOOL_FINAL_TYPES: Final = frozenset({"lineup.tool.result", "lineup.tool.error"})
# Call ids remembered after their final (a second final is then dropped), and receipts
# kept for calls not (yet) made through `call()` in this process (a restarted agent that
# re-makes a call finds the outcome it already had in its backlog).
_FINISHED_KEPT: Final = 16384
_UNCLAIMED_CALLS_KEPT: Final = 256
_UNCLAIMED_EVENTS_KEPT: Final = 64
# Unread inbox messages hold the cursor, so acks stop and, past the AppServer's window of
# unacknowledged messages, so does delivery (calls' receipts included): say so in the log.
_UNREAD_WARNING: Final = 512


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

    @property
    def call_id(self) -> str | None:
        """The tool call it belongs to (`correlation.call_id`), if any."""
        correlation = self.envelope.correlation
        return None if correlation is None else correlation.call_id

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


def _read_inventories(state_dir: Path | None) -> dict[str, tuple[Inventory, dict[str, Any]]]:
    """The inventories kept in `state_dir` (each parsed, and its envelope); none when there
    is no readable file: they come again with the runtime's next revision."""
    if state_dir is None:
        return {}
    try:
        kept = json.loads((state_dir / INVENTORY_FILE).read_text(encoding="utf-8"))
        envelopes = [validate_message(raw) for raw in kept.values()]
        return {env.scope.conversation_id: (parse_payload(env), env.to_dict()) for env in envelopes}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, AttributeError, ContractError):
        log.warning("%s: unreadable, ignored", state_dir / INVENTORY_FILE)
        return {}


def _write_json(path: Path, value: Any) -> None:
    replace_file(path, json.dumps(value) + "\n")


class ToolCall:
    """One tool call made with `AgentClient.call`: iterate it for what the runtime says.

    ```python
    async for event in agent.call("conv-1", "pomodoro.start", {"minutes": 25}):
        print(event.type)          # lineup.tool.accepted, ... lineup.tool.result
    ```

    The first step of the iteration submits the call (`SubmitRejected` if the AppServer
    refuses it); then each `lineup.tool.*` envelope of its `call_id` comes as an
    `AgentMessage`, in stream order, the last being the one final `lineup.tool.result` or
    `lineup.tool.error` (`final`). If the connection ends first, the iteration raises
    `LinkFailed` (refused for good) or `AgentError` (the client stopped). `outcome()` runs it
    to the end and returns the final. `aclose()` (or leaving the `async with` block) stops
    following the call; it does not cancel it (`AgentClient.cancel` does).
    """

    def __init__(
        self,
        client: AgentClient,
        envelope: dict[str, Any],
        *,
        tool: InventoryTool | None,
    ) -> None:
        self._client = client
        self.envelope = envelope
        self.tool = tool  # the inventory's entry, when the call was resolved from it
        self.call_id: str = envelope["correlation"]["call_id"]
        self.conversation_id: str = envelope["scope"]["conversation_id"]
        self.app_scope: str = envelope["scope"]["app_scope"]
        self.method: str = envelope["payload"]["method"]
        self.contract_version: str = envelope["payload"]["contract_version"]
        self.revision: str = envelope["correlation"]["inventory_revision"]
        self.sent: Sent | None = None
        self.final: AgentMessage | None = None
        self._events: trio.MemoryReceiveChannel[AgentMessage] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"<ToolCall {self.call_id} {self.app_scope}/{self.method}>"

    @property
    def ok(self) -> bool:
        """Whether it ended with a result (False while it has not ended)."""
        return self.final is not None and self.final.type == "lineup.tool.result"

    def __aiter__(self) -> ToolCall:
        return self

    async def __anext__(self) -> AgentMessage:
        if self.final is not None or self._closed:
            raise StopAsyncIteration
        if self._events is None:
            self._events = await self._submit()
        try:
            event = await self._events.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            if self._closed:
                raise StopAsyncIteration from None
            raise self._client._ended_error(f"before call {self.call_id} ended") from None
        if event.type in TOOL_FINAL_TYPES:
            self.final = event
        return event

    async def _submit(self) -> trio.MemoryReceiveChannel[AgentMessage]:
        """Follows the call id, then submits the call: no event can come before."""
        events = self._client._follow(self.call_id)
        try:
            result = await self._client.submit(self.envelope)
        except AgentError:
            self._client._unfollow(self.call_id)
            if not self._client._ended:
                raise
            raise self._client._ended_error(f"before call {self.call_id} ended") from None
        except BaseException:
            self._client._unfollow(self.call_id)
            raise
        if result.status != "accepted" or result.seq is None:
            self._client._unfollow(self.call_id)
            raise SubmitRejected(self.envelope["id"], str(result.code), result.detail or "")
        self.sent = Sent(self.envelope["id"], result.seq, result.duplicate, call_id=self.call_id)
        return events

    async def outcome(self) -> AgentMessage:
        """Follows the call to its end; its final `lineup.tool.result` or `.error`."""
        async for _event in self:
            pass
        assert self.final is not None
        return self.final

    async def aclose(self) -> None:
        """Stops following the call (the runtime goes on with it)."""
        self._closed = True
        if self._events is not None and self.final is None:
            self._client._unfollow(self.call_id)
            self._events.close()

    async def __aenter__(self) -> ToolCall:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


class AgentClient:
    """An agent's connection to the AppServer.

    ```python
    async with open_agent(url, agent_id="demo", token=token, state_dir=path) as agent:
        while True:
            message = await agent.receive()
            if message.type == "lineup.message" and message.sender.kind == "user":
                await agent.send_markdown(message.conversation_id, "**Hi!**", reply_to=message.id)
    ```

    `state_dir` keeps the cursor and the latest inventories between runs (none: start from
    the beginning each time);
    `include_own` passes the agent's own messages through `receive()` too. With
    `inbox=False` nothing waits for `receive()`: every message counts as processed once the
    client has taken it in (its inventory kept, a call's receipts handed to the call), for
    an agent that only calls tools. Otherwise read `receive()`: a message left unread holds
    the cursor, and the AppServer stops delivering when too many are unacknowledged.
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
        inbox: bool = True,
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
        self._keep_inbox = inbox
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
        self._inbox_in, self._inbox = trio.open_memory_channel[AgentMessage](math.inf)
        self._current: int | None = None  # handed out by `receive()`, not yet processed
        # Inbox messages not yet processed, in order, each with the highest seq taken in
        # before it: the cursor can go no further while the first one waits.
        self._unprocessed: deque[tuple[int, int]] = deque()
        self._taken = self._cursor  # the highest seq the dispatcher has taken in
        self._taken_changed: trio.Event | None = None
        kept = _read_inventories(self.state_dir)
        self._inventories = {conversation: pair[0] for conversation, pair in kept.items()}
        self._inventory_envelopes = {conversation: pair[1] for conversation, pair in kept.items()}
        self._calls: dict[str, trio.MemorySendChannel[AgentMessage]] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._unclaimed: OrderedDict[str, list[AgentMessage]] = OrderedDict()
        self._ended = False
        self._connection_over = trio.Event()

    # --- connection --------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keeps the connection up until cancelled (`LinkFailed` if refused for good)."""
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.link.run)
                nursery.start_soon(self._dispatch)
                task_status.started()
        except BaseExceptionGroup as group:  # the link's one error (the dispatcher has none)
            if len(group.exceptions) != 1:
                raise
            error = group.exceptions[0]
            raise error from error.__cause__
        finally:
            self._end()

    async def wait_live(self) -> None:
        """Until the backlog is read and live delivery has begun (or, send-only, connected)."""
        await self.link.wait_state("live")

    async def wait_caught_up(self) -> None:
        """Until the backlog is read and every message of it taken in: from then on
        `inventory()` is what the runtime had published when this client connected."""
        await self.link.wait_state("live")
        target = self.link.statistics().received_upto
        while self._taken < target:
            if self._ended:
                raise self._ended_error("before the backlog was read")
            if self._taken_changed is None:
                self._taken_changed = trio.Event()
            await self._taken_changed.wait()

    @property
    def cursor(self) -> int:
        """The highest seq processed (and saved, with a `state_dir`)."""
        return self._cursor

    def statistics(self) -> LinkStatistics:
        return self.link.statistics()

    def _ended_error(self, when: str) -> Exception:
        """The error for something cut short by the end of the connection."""
        return self.link.failure or AgentError(f"the connection has ended {when}".rstrip())

    # --- the dispatcher ----------------------------------------------------------------

    async def _dispatch(self) -> None:
        try:
            async for received in self.link.messages:
                self._take(received)
        finally:
            self._end()

    def _end(self) -> None:
        """The connection is over: whoever waits for a message learns it."""
        self._ended = True
        self._connection_over.set()
        self._inbox_in.close()
        for channel in self._calls.values():
            channel.close()
        self._calls.clear()
        self._notify_taken()

    def _notify_taken(self) -> None:
        if self._taken_changed is not None:
            self._taken_changed.set()
            self._taken_changed = None

    def _take(self, received: Received) -> None:
        """One message off the link: the inventory, a call's event, or the inbox."""
        sender = received.message.get("sender")
        own = (
            isinstance(sender, dict)
            and sender.get("kind") == "agent"
            and sender.get("id") == self.agent_id
        )
        if own and not self._include_own:  # no need to read what this agent wrote
            self._taken_in(received.seq)
            return
        try:
            envelope = validate_message(received.message)
        except ContractError as exc:  # the server checked it; a newer peer's type, maybe
            log.warning("seq %d skipped: %s", received.seq, exc)
            self._taken_in(received.seq)
            return
        message = AgentMessage(received.seq, envelope)
        if envelope.type == "lineup.inventory":
            self._keep_inventory(message)
        elif envelope.type in TOOL_EVENT_TYPES and self._route(message):
            self._taken_in(received.seq)
            return
        if not self._keep_inbox:
            self._taken_in(received.seq)
            return
        self._unprocessed.append((received.seq, self._taken))
        if len(self._unprocessed) == _UNREAD_WARNING:
            log.warning(
                "%d messages wait unread in the inbox and hold the cursor: read receive(), "
                "or make the client with inbox=False",
                _UNREAD_WARNING,
            )
        self._inbox_in.send_nowait(message)
        self._taken = received.seq
        self._notify_taken()

    def _taken_in(self, seq: int) -> None:
        """`seq` is taken in and needs nothing more."""
        self._taken = seq
        if not self._unprocessed:
            self._advance(seq)
        self._notify_taken()

    def _keep_inventory(self, message: AgentMessage) -> None:
        inventory = parse_payload(message.envelope)
        known = self._inventories.get(message.conversation_id)
        if known is None or int(inventory.revision) >= int(known.revision):
            self._inventories[message.conversation_id] = inventory
            if self.state_dir is not None:
                self._inventory_envelopes[message.conversation_id] = message.envelope.to_dict()
                _write_json(self.state_dir / INVENTORY_FILE, self._inventory_envelopes)

    def _route(self, message: AgentMessage) -> bool:
        """Hands a call's event to the call; True if nothing else needs it."""
        call_id = message.call_id
        if call_id is None:
            return False
        channel = self._calls.get(call_id)
        final = message.type in TOOL_FINAL_TYPES
        if channel is not None:
            channel.send_nowait(message)
            if final:
                del self._calls[call_id]
                channel.close()
                self._remember_finished(call_id)
            return True
        if call_id in self._finished:  # a second final (or a resent receipt): ignored
            return True
        # Not a call made here (yet): `receive()` gets it, and a `call()` with this id
        # made later (the same call re-made after a restart) gets it too.
        events = self._unclaimed.setdefault(call_id, [])
        self._unclaimed.move_to_end(call_id)
        if final or len(events) < _UNCLAIMED_EVENTS_KEPT:
            events.append(message)
        while len(self._unclaimed) > _UNCLAIMED_CALLS_KEPT:
            self._unclaimed.popitem(last=False)
        return False

    def _remember_finished(self, call_id: str) -> None:
        self._finished[call_id] = None
        while len(self._finished) > _FINISHED_KEPT:
            self._finished.popitem(last=False)

    def _follow(self, call_id: str) -> trio.MemoryReceiveChannel[AgentMessage]:
        """A channel for the events of `call_id`, from now on (and any already received)."""
        if self._ended:
            raise self._ended_error("before the call was made")
        if call_id in self._calls:
            raise AgentError(f"call {call_id} is already in flight: use another call id")
        send, events = trio.open_memory_channel[AgentMessage](math.inf)
        self._finished.pop(call_id, None)
        for message in self._unclaimed.pop(call_id, ()):
            send.send_nowait(message)
            if message.type in TOOL_FINAL_TYPES:
                send.close()
                self._remember_finished(call_id)
                return events
        self._calls[call_id] = send
        return events

    def _unfollow(self, call_id: str) -> None:
        channel = self._calls.pop(call_id, None)
        if channel is not None:
            channel.close()

    # --- receiving ---------------------------------------------------------------------

    async def receive(self) -> AgentMessage:
        """The next message for this agent, in stream order, each once, except the events
        of calls made with `call()`. Asking for the next one marks the previous one
        processed."""
        if not self._keep_inbox:
            raise AgentError("this client keeps no inbox (it was made with inbox=False)")
        self._finish_current()
        try:
            message = await self._inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise self._ended_error("") from None
        self._current = message.seq
        return message

    def processed(self, message: AgentMessage) -> None:
        """Marks `message` (and everything before it) processed now."""
        if self._current is not None and message.seq >= self._current:
            self._current = None
        self._processed_upto(message.seq)

    def inventory(self, conversation_id: str) -> Inventory | None:
        """The latest inventory the runtime published for the conversation; before it has
        published one, the one for conversations not yet begun (`runtime:global`); None
        before either. The global one does not override a conversation's own: it can change
        where the conversation's does not (a policy naming the agent or the conversation)."""
        own = self._inventories.get(conversation_id)
        return own if own is not None else self._inventories.get(RUNTIME_GLOBAL_CONVERSATION)

    def _finish_current(self) -> None:
        if self._current is not None:
            seq, self._current = self._current, None
            self._processed_upto(seq)

    def _processed_upto(self, seq: int) -> None:
        while self._unprocessed and self._unprocessed[0][0] <= seq:
            self._unprocessed.popleft()
        self._advance(self._unprocessed[0][1] if self._unprocessed else self._taken)

    def _advance(self, seq: int) -> None:
        if seq <= self._cursor:
            return
        self._cursor = seq
        if self.state_dir is not None:
            _write_json(self.state_dir / CURSOR_FILE, {"cursor": seq})
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
        instance_id: str | None = None,
        reply_to: str | None = None,
        call_id: str | None = None,
        inventory_revision: str | None = None,
        message_id: str | None = None,
    ) -> dict[str, Any]:
        """A checked envelope from this agent (`ContractError` if it breaks the contract);
        with `instance_id`, to that instance of the app (in its target and scope)."""
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
        if instance_id is not None:
            raw["target"]["instance_id"] = raw["scope"]["instance_id"] = instance_id
        if correlation:
            raw["correlation"] = correlation
        return validate_envelope(raw).to_dict()

    def enqueue(self, envelope: Mapping[str, Any]) -> Submission:
        """Queues a built envelope without waiting (many in a row keep their order)."""
        return self.link.enqueue(envelope)

    async def submit(self, envelope: Mapping[str, Any]) -> SubmitResult:
        """Submits a built envelope and returns the verdict as is (accepted or rejected).
        A verdict still awaited when the connection ends never comes: that is an error."""
        if self._ended:
            raise self._ended_error("before the message was sent")
        verdict: SubmitResult | None = None
        async with trio.open_nursery() as nursery:

            async def submitted() -> None:
                nonlocal verdict
                verdict = await self.link.submit(envelope)
                nursery.cancel_scope.cancel()

            async def over() -> None:
                await self._connection_over.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(submitted)
            nursery.start_soon(over)
        if verdict is None:
            raise self._ended_error("before the AppServer answered")
        return verdict

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

    async def send_state_patch(
        self,
        conversation_id: str,
        instance_id: str,
        patch: Mapping[str, Any],
        *,
        base_revision: int | None = None,
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """A JSON Merge Patch to an app instance's state (`lineup.app.state.patch`), for an
        app that subscribes to it; the app is the instance's (`<app_scope>:<local>`)."""
        payload: dict[str, Any] = {"patch": dict(patch)}
        if base_revision is not None:
            payload["base_revision"] = base_revision
        return await self._send(
            self.envelope(
                "lineup.app.state.patch",
                conversation_id,
                payload,
                app_scope=instance_id.partition(":")[0],
                instance_id=instance_id,
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

    async def withdraw(
        self,
        conversation_id: str,
        interaction_id: str,
        *,
        reason: str | None = None,
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """Takes back a question asked with `ask_*` (`lineup.interaction.withdraw`): the
        chat shows it closed ("No longer asked", with `reason`, a short label) and sends no
        answer to it any more. A question already answered or withdrawn, or one this agent
        never asked in the conversation, stays as it is."""
        payload = {"interaction_id": interaction_id}
        if reason is not None:
            payload["reason"] = reason
        envelope = self.envelope(
            "lineup.interaction.withdraw",
            conversation_id,
            payload,
            reply_to=reply_to,
            message_id=message_id,
        )
        return await self._send(envelope, interaction_id=interaction_id)

    def call(
        self,
        conversation_id: str,
        method: str,
        arguments: Mapping[str, Any],
        *,
        app_scope: str | None = None,
        revision: str | int | None = None,
        call_id: str | None = None,
        contract_version: str | None = None,
        message_id: str | None = None,
    ) -> ToolCall:
        """A tool call (`lineup.tool.invoke`, §5-6), followed to its end: iterate the
        returned `ToolCall` (or `await ... .outcome()`) to submit it and get its receipts,
        progress and final result or error.

        The app, the contract version and the revision come from the latest inventory held
        for the conversation (`inventory()`); `app_scope` picks among apps offering the same
        method, and with `app_scope` (and `revision`, when no inventory has arrived) a method
        the inventory does not list is called anyway, for the runtime to refuse. The call id
        defaults to `call_<envelope id>`. `AgentError` if the call cannot be built; nothing
        is sent then. Many calls may be in flight at once.
        """
        inventory = self.inventory(conversation_id)
        tools = [] if inventory is None else inventory.tools
        matches = [
            tool
            for tool in tools
            if tool.method == method and (app_scope is None or tool.app_scope == app_scope)
        ]
        if len(matches) > 1:
            scopes = ", ".join(sorted(tool.app_scope for tool in matches))
            raise AgentError(f"{method!r} is offered by several apps ({scopes}): pass app_scope")
        tool = matches[0] if matches else None
        if tool is None and app_scope is None:
            where = (
                f"no inventory has been received for {conversation_id!r}"
                if inventory is None
                else f"it is not in the inventory of {conversation_id!r} "
                f"(revision {inventory.revision})"
            )
            raise AgentError(
                f"cannot call {method!r}: {where}; pass app_scope (and revision) to call it anyway"
            )
        if revision is None:
            if inventory is None:
                raise AgentError(
                    f"cannot call {method!r}: no inventory has been received for "
                    f"{conversation_id!r}; pass revision"
                )
            revision = inventory.revision
        message_id = message_id or new_message_id()
        payload = {
            "method": method,
            "contract_version": contract_version
            or (tool.contract_version if tool is not None else "1"),
            "arguments": dict(arguments),
        }
        envelope = self.envelope(
            "lineup.tool.invoke",
            conversation_id,
            payload,
            app_scope=tool.app_scope if tool is not None else str(app_scope),
            target_kind="runtime",
            call_id=call_id or f"call_{message_id}",
            inventory_revision=str(revision),
            message_id=message_id,
        )
        return ToolCall(self, envelope, tool=tool)

    async def cancel(
        self,
        conversation_id: str,
        call_id: str,
        app_scope: str,
        *,
        reason: str | None = None,
        message_id: str | None = None,
    ) -> Sent:
        """Withdraws a call (`lineup.tool.cancel`, §6): one not yet finished ends with
        `lineup.tool.error {code: cancelled_by_user}`; one already finished keeps its outcome.
        `app_scope` is the app of the call's tool."""
        envelope = self.envelope(
            "lineup.tool.cancel",
            conversation_id,
            {} if reason is None else {"reason": reason},
            app_scope=app_scope,
            target_kind="runtime",
            call_id=call_id,
            message_id=message_id,
        )
        return await self._send(envelope, call_id=call_id)

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
        """Sends a tool call without following it (`call()` follows it). The revision
        defaults to the latest inventory received for the conversation; receipts and the
        one final result arrive through `receive()` with the returned `call_id`."""
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
