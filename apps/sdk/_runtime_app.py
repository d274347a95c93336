"""`RuntimeApp`: the process side of an app, and the SDK object it hands the app.

An app subclasses `RuntimeApp` and uses only `self.sdk`:

- `sdk.app`: its context (scope, kind, version);
- `sdk.state.snapshot(conversation_id)` / `sdk.state.subscribe(listener)`: the view model;
- `sdk.agent_messages.list(...)`, `.subscribe(handler, ...)`, `.acknowledge(id)`:
  display messages (`lineup.message`, `lineup.task.progress`) and withdrawals
  (`lineup.interaction.withdraw`) are acknowledged once the subscribers have run;
  interaction requests wait for an explicit `acknowledge`, or for their withdrawal;
- `sdk.actions.dispatch(action)`: a declarative action (`send_text`, `answer`) into the
  runtime's outbox, shown at once as a pending local echo; `sdk.actions.refuse(action,
  code)`: one the app refuses itself, shown refused and never sent;
- `sdk.navigation`, `sdk.lifecycle`, `sdk.apps`: other apps and its own instances
  (`_navigation`);
- `sdk.artifacts`: bytes with a media type and a title, kept by the runtime:
  `create(...)` → a reference for a tool result, `read(artifact_id)`, `list()` (`_artifacts`);
- `sdk.session_data`: one JSON object per instance, kept by the runtime with a revision:
  `get`, `replace(data, expected_revision)`, `subscribe(listener)` (`_session_data`);
- `sdk.tools`: the agent's tool calls, each run by its `@tool` handler in a task of its
  own (`_tools`): `progress(call_id, ...)`, and `complete(call_id, output)` /
  `fail(call_id, code)` for a call whose handler returned `sdk.tools.PENDING`;
- `sdk.diagnostics.health(status, detail)` / `.event(level, name, fields)`: what the app
  says of itself, kept by the store under its own name (`_diagnostics`);
- `sdk.capabilities.request(capability, purpose, input)`: a system effect, with the user's
  consent, through the capability gateway (`_capabilities`);
- `sdk.interaction.set_mode(...)` / `.add_speech(...)`: the Interaction App's own facts of a
  conversation, its mode and the speech made of an agent message (`_interaction`);
- `sdk.surface.on_event(name, handler)` / `.patch(state, instance_id=...)`: what the app's
  surface emits, and its state (`_surface`);
- `sdk.settings` (the settings app only; the runtime refuses anyone else): grants, the
  tool policy, the default app and each app's data, each from its owner (`_settings`).

The process's kernel mailbox is the app's App Inbox: what the router delivers while
the app is not running waits there and is replayed, in order, when it starts. Deliveries
are applied to the local log once; subscribers are called for every message not yet
acknowledged, so after a crash they may see a message again (apps handle
messages idempotently, by id).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from pydantic import JsonValue

from actors.kernel import Actor, DerivedIds, Message, handles, new_id
from contracts import Code, ContractError

from ._app_core import AppContext
from ._artifacts import ArtifactsAPI
from ._capabilities import GATEWAY, CapabilitiesAPI
from ._diagnostics import DiagnosticsAPI
from ._interaction import InteractionAPI, InteractionInbox
from ._log import EventLog
from ._navigation import APP_MANAGER, AppsAPI, LifecycleAPI, NavigationAPI
from ._session_data import SessionDataAPI, SessionDataInbox
from ._settings import SettingsAPI
from ._surface import SurfaceAPI, SurfaceInbox, declared_events, declares_surface
from ._tools import TOOL_ROUTER, ToolsAPI
from ._view import WITHDRAW, ConversationView, ViewModel
from .door import (
    DOOR,
    ActionState,
    ConsentCard,
    DeadlineNews,
    Deliver,
    Lifecycle,
    ToolCancel,
    ToolEvent,
    ToolInvoke,
    ToolSteps,
)

log = logging.getLogger("lineup.app")

AUTO_ACK_TYPES: Final = frozenset({"lineup.message", "lineup.task.progress", WITHDRAW})
ROUTER: Final = "router"
HOST: Final = "host"
STORE: Final = "store"

MessageHandler = Callable[[dict[str, Any]], Awaitable[None] | None]
StateListener = Callable[[ConversationView, dict[str, Any]], Awaitable[None] | None]


async def _maybe_await(value: Awaitable[None] | None) -> None:
    if inspect.isawaitable(value):
        await value


# The ids of what the app asks while it handles a message or runs a tool call. Kept per
# task: tool handlers run beside the message handlers, and each derives its own.
_deriving: ContextVar[DerivedIds | None] = ContextVar("lineup_sdk_ids", default=None)


class _Ids:
    """Deterministic ids inside a handler (derived from the message handled), else fresh."""

    def next(self) -> str:
        ids = _deriving.get()
        return new_id() if ids is None else ids.next()

    @contextmanager
    def deriving(self, parent: str) -> Iterator[None]:
        token = _deriving.set(DerivedIds(parent))
        try:
            yield
        finally:
            _deriving.reset(token)


class StateAPI:
    def __init__(self, app: RuntimeApp) -> None:
        self._app = app
        self._listeners: list[StateListener] = []

    def snapshot(self, conversation_id: str) -> dict[str, Any]:
        view = self._app._views.conversations.get(conversation_id) or ConversationView(
            conversation_id
        )
        return view.to_dict()

    def conversations(self) -> list[str]:
        return list(self._app._views.conversations)

    def subscribe(self, listener: StateListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def _changed(self, view: ConversationView, change: dict[str, Any]) -> None:
        for listener in list(self._listeners):
            await _maybe_await(listener(view, change))


class AgentMessagesAPI:
    def __init__(self, app: RuntimeApp) -> None:
        self._app = app
        self._subscribers: list[tuple[MessageHandler, str | None, frozenset[str] | None]] = []

    def list(
        self, *, conversation_id: str | None = None, after: int = 0, limit: int = 100
    ) -> dict[str, Any]:
        """A page of the app's inbox (the reliable mirror), in arrival order."""
        events = list(
            self._app._log.events(
                conversation_id=conversation_id, after=after, kind="agent", limit=limit
            )
        )
        return {
            "messages": [{**e["body"], "acked": e["state"] == "acked"} for e in events],
            "next": events[-1]["pos"] if events else after,
        }

    def subscribe(
        self,
        handler: MessageHandler,
        *,
        conversation_id: str | None = None,
        types: tuple[str, ...] | None = None,
    ) -> Callable[[], None]:
        entry = (handler, conversation_id, frozenset(types) if types else None)
        self._subscribers.append(entry)
        return lambda: self._subscribers.remove(entry)

    async def acknowledge(self, message_id: str) -> None:
        self._app._ack([message_id])

    async def _dispatch(self, message: dict[str, Any]) -> None:
        for handler, conversation, types in list(self._subscribers):
            if conversation is not None and message["conversation_id"] != conversation:
                continue
            if types is not None and message["type"] not in types:
                continue
            await _maybe_await(handler(message))


class ActionsAPI:
    def __init__(self, app: RuntimeApp) -> None:
        self._app = app

    async def dispatch(self, action: dict[str, Any]) -> dict[str, Any]:
        """Queue `action` for the agent; returns its receipt {id, state: pending}.

        The envelope id is minted here so that the local echo and the AppServer's verdict
        name the same message. Called from a handler, every id derives from the handled
        message: a replay dispatches nothing twice.
        """
        app = self._app
        action = {**action, "id": app._ids.next()}
        kernel_id = app._ids.next()
        if app._log.add_action(kernel_id, action):
            event = {
                "kind": "action",
                "conversation_id": action.get("conversation_id", ""),
                "body": action,
                "state": "pending",
            }
            await app._apply(event)
        await app.cast(ROUTER, "router.action", action, id=app._ids.next())
        return {"id": action["id"], "state": "pending"}

    async def refuse(self, action: dict[str, Any], code: Code) -> dict[str, Any]:
        """Record what the user asked as refused by the app itself, with `code`, and send
        nothing: shown in the timeline like any action of theirs (an answer to a question
        the agent no longer asks). Returns its receipt {id, state: refused, code}."""
        app = self._app
        action = {**action, "id": app._ids.next()}
        if app._log.add_action(app._ids.next(), action, state="refused", code=code.value):
            event = {
                "kind": "action",
                "conversation_id": action.get("conversation_id", ""),
                "body": action,
                "state": "refused",
                "code": code.value,
            }
            await app._apply(event)
        return {"id": action["id"], "state": "refused", "code": code.value}


@dataclass(frozen=True)
class _Withdrawal:
    """The agent's withdrawal of a question, judged before the view applies it: it closes
    the open request (which needs no answer now, so it is acknowledged), or changes nothing,
    and the app files why in its diagnostics (the agent hears nothing back from an app)."""

    message: dict[str, Any]
    request_id: str | None  # the message that asked, when the withdrawal closes it
    refusal: Code | None

    @classmethod
    def of(cls, views: ViewModel, message: dict[str, Any]) -> _Withdrawal | None:
        if message["type"] != WITHDRAW:
            return None
        view = views.conversations.get(message["conversation_id"])
        view = view or ConversationView(message["conversation_id"])
        refusal = view.withdraw_refusal(message)
        if refusal is not None:
            return cls(message, None, Code(refusal))
        request = view.pending_interactions[str(message["payload"]["interaction_id"])]
        return cls(message, str(request["message_id"]), None)

    async def settle(self, app: RuntimeApp) -> None:
        if self.request_id is not None:
            app._ack([self.request_id])
            return
        assert self.refusal is not None
        fields = {
            "code": self.refusal.value,
            "interaction_id": str(self.message["payload"].get("interaction_id")),
            "message_id": self.message["id"],
        }
        await app.sdk.diagnostics.event("warning", "interaction.withdraw.refused", fields)


class SDK:
    def __init__(self, app: RuntimeApp, context: AppContext) -> None:
        self.app = context
        self.state = StateAPI(app)
        self.agent_messages = AgentMessagesAPI(app)
        self.actions = ActionsAPI(app)
        self.navigation = NavigationAPI(app)
        self.lifecycle = LifecycleAPI()
        self.apps = AppsAPI(app)
        self.tools = ToolsAPI(app)
        self.artifacts = ArtifactsAPI(app)
        self.session_data = SessionDataAPI(app)
        self.diagnostics = DiagnosticsAPI(app)
        self.capabilities = CapabilitiesAPI(app)
        self.interaction = InteractionAPI(app)
        self.settings = SettingsAPI(app)
        self.surface = SurfaceAPI(
            app, declared_events(type(app)), shown=declares_surface(type(app))
        )


class RuntimeApp(InteractionInbox, SessionDataInbox, SurfaceInbox, Actor):
    """Base class of an app process. Subclasses override `on_app_start` and `on_input`."""

    door = DOOR
    sdk: SDK  # made at start; its parts see it through `_app_core`'s faces

    app_kind = "core"
    app_version = "0.1.0"

    async def on_start(self) -> None:
        self._refused_inputs = 0  # inputs from a sender that may not send them (see _from)
        scope = str(self.config.get("app_scope") or self.name.removeprefix("app."))
        # Its private directory: an absolute path for a core app, "." (its cwd) for an
        # isolated one, which cannot reach the data dir (the jail's docstring, in the
        # kernel's `spawning.jail`).
        self._log = EventLog(self.config["app_dir"])
        self._views = ViewModel()
        self._ids = _Ids()
        for event in self._log.events():
            self._views.apply(event)
        self.sdk = SDK(self, AppContext(scope, self.app_kind, self.app_version))
        await self.on_app_start()
        # The calls the last incarnation left, once the app's own state is back.
        await self.sdk.tools._restart()

    async def on_app_start(self) -> None:
        """The app's own start: subscribe, draw. The view model is already restored."""

    async def on_input(self, body: dict[str, Any]) -> None:
        """Input from the user's side: a UI action the host actor checked and passed on."""

    async def on_recorded(self, body: dict[str, Any]) -> None:
        """The Interaction App's: what the user recorded with push-to-talk ({`conversation_id`,
        `request_id`, `recording`: its artifact's reference and `duration_ms`})."""

    async def on_interaction_settings(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Interaction App's: its settings ({`default_mode`?}: set it), as in force."""
        return {}

    def statistics_extra(self) -> dict[str, Any]:
        if not hasattr(self, "sdk"):  # asked before on_start finished
            return {}
        return {
            "refused_inputs": self._refused_inputs,
            "instances": self.sdk.lifecycle.instances(),
        }

    async def _apply(self, event: dict[str, Any]) -> None:
        view = self._views.apply(event)
        await self.sdk.state._changed(view, event)

    def _ack(self, ids: list[str]) -> None:
        """Acknowledged messages are no longer offered to subscribers. The ack is the app's
        own: its mailbox already marked each delivery done once it was applied here."""
        if ids:
            self._log.mark_acked(ids)

    def _from(self, msg: Message, *senders: str) -> None:
        """Each kind of input has its sources; anything else is refused with its code and
        counted (the supervisor's door refuses it first; this holds wherever an app runs
        without one)."""
        if msg.sender in senders:
            return
        self._refused_inputs += 1
        raise ContractError(
            Code.SENDER_NOT_ALLOWED, f"only {' or '.join(senders)} sends {msg.type}"
        )

    @handles("app.deliver")
    async def _deliver(self, msg: Message[Deliver]) -> None:
        self._from(msg, ROUTER)  # the router delivers what the store has persisted
        with self._ids.deriving(msg.id):
            messages = msg.body["messages"]
            for message in self._log.add_agent_messages(msg.id, messages):
                withdrawal = _Withdrawal.of(self._views, message)
                await self._apply(
                    {
                        "kind": "agent",
                        "conversation_id": message["conversation_id"],
                        "body": message,
                        "state": "received",
                    }
                )
                if withdrawal is not None:
                    await withdrawal.settle(self)
            waiting = self._log.unacked([m["id"] for m in messages])
            auto = []
            for message in messages:
                if message["id"] in waiting:
                    await self.sdk.agent_messages._dispatch(message)
                    if message["type"] in AUTO_ACK_TYPES:
                        auto.append(message["id"])
            self._ack(auto)

    @handles("app.action.state")
    async def _action_state(self, msg: Message[ActionState]) -> None:
        # The router refuses an action; the store records the AppServer's verdict on it.
        self._from(msg, ROUTER, STORE)
        body = msg.body
        if self._log.set_action_state(msg.id, body) and body["id"] is not None:
            for event in self._log.events_by_id(body["id"]):
                await self._apply({**event, "state": body["state"], "code": body.get("code")})

    @handles("app.tool.event")
    async def _tool_event(self, msg: Message[ToolEvent]) -> None:
        """A step of an agent's tool call, for the timeline: the tool router's word only."""
        self._from(msg, TOOL_ROUTER)
        await self._tool_steps(msg.id, [(msg.id, dict(msg.body))])

    @handles("app.tool.events")
    async def _tool_events(self, msg: Message[ToolSteps]) -> None:
        """Several steps of agents' tool calls, for the timeline, in the order taken."""
        self._from(msg, TOOL_ROUTER)
        await self._tool_steps(msg.id, [(s["id"], dict(s["step"])) for s in msg.body["steps"]])

    async def _tool_steps(self, kernel_id: str, steps: list[tuple[str, dict[str, Any]]]) -> None:
        for body in self._log.add_tool_events(kernel_id, steps):
            await self._apply(
                {"kind": "tool", "conversation_id": body["conversation_id"], "body": body}
            )

    @handles("app.lifecycle")
    async def _lifecycle(self, msg: Message[Lifecycle]) -> None:
        # Instances are the app manager's to move; nobody else's word counts.
        self._from(msg, APP_MANAGER)
        with self._ids.deriving(msg.id):
            await self.sdk.lifecycle._fire(dict(msg.body))

    @handles("app.input")
    async def _input(self, msg: Message[dict[str, JsonValue]]) -> None:
        # The user's side reaches an app only through the host actor: an
        # input from anyone else is not the user's, whatever it says.
        self._from(msg, HOST)
        with self._ids.deriving(msg.id):
            await self.on_input(dict(msg.body or {}))

    @handles("app.tool.invoke")
    async def _tool_invoke(self, msg: Message[ToolInvoke]) -> None:
        # The tool router alone decides that a call may run (visibility, revision,
        # arguments, activation): a call from anyone else is not the agent's.
        self._from(msg, TOOL_ROUTER)
        await self.sdk.tools._invoke(msg.id, dict(msg.body))

    @handles("app.capability.consent")
    async def _capability_consent(self, msg: Message[ConsentCard]) -> None:
        """A consent card opened or closed, for the timeline: the gateway's word only."""
        self._from(msg, GATEWAY)
        card = dict(msg.body)
        if self._log.add_consent_event(msg.id, card):
            await self._apply(
                {"kind": "consent", "conversation_id": card["conversation_id"], "body": card}
            )

    @handles("app.tool.cancel")
    async def _tool_cancel(self, msg: Message[ToolCancel]) -> None:
        self._from(msg, TOOL_ROUTER)
        await self.sdk.tools._cancel(str(msg.body["call_id"]))

    @handles("app.tool.deadline")
    async def _tool_deadline(self, msg: Message[DeadlineNews]) -> None:
        # Only the runtime keeps deadline operations: its word alone says how one goes.
        self._from(msg, TOOL_ROUTER)
        with self._ids.deriving(msg.id):
            await self.sdk.tools._deadline_changed(dict(msg.body))
