"""`sdk.surface`: the app's side of its surface, the UI a host shows from its bundle.

The surface is untrusted code in a sandboxed frame; everything it asks reaches the app's
process from the web host only (`app.surface.request`, the door's sender), after the page
and the web host have checked it against the manifest, and it names one instance of this
app: the one the web host shows. The process checks the scope and the event again and acts
with its own SDK, so what a surface can do is what its app can do, no more:

| `op` | the app does | reply |
|---|---|---|
| `event` | calls each `on_event(name, handler)`: handler(payload, instance_id) | {`ok`} |
| `session.get` | `session_data.get` of the instance | {`data`, `revision`} |
| `session.replace` | `session_data.replace` (the store's order and quotas hold) | {`revision`} |
| `session.subscribe` | pushes each later revision of the instance's data | {`data`, `revision`} |
| `capability` | `capabilities.request`, answered once decided | {`status`, `output`, `code`?} |
| `tool.calls` | the open calls handed to the instance's surfaces | {`calls`} |
| `tool.result` / `tool.error` / `tool.progress` | ends / reports on such a call | {`ok`} |

A subscription lives in the app's process: a surface shown while that process restarts
subscribed with the one that is gone and is not asked again, so the process that follows
pushes the revisions of an instance's data from its first change on, whoever subscribed
(the web host relays them to the instance's surfaces it shows, and drops them if none is).

A `miniapp_sdk` tool's call stays with its `@tool` handler, which runs in the process
whether a surface is shown or not and shows what it decided with `patch`. A
`surface_bridge` tool's handler may hand its call to the surface (`sdk.tools`): the call is
pushed to the web host (`kind: tool_call`), which offers it to the surfaces of its
instance; a surface answers through the bridge, and the answer is the call's end only if
the call is still open and was handed to that instance (the tool router then holds the
output to its schema). `patch(state, instance_id)`
sends a JSON merge patch of the surface's state to the web host (`web_host.surface.push`),
which keeps the merged state for the surfaces it shows: state is a view, and what must
outlive the web host belongs in session data. A runtime without a web host has no
surfaces: the supervisor drops a patch there, and the app goes on.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from actors.kernel import REPLY_LATER, Actor, CallFailed, Message, handles
from contracts import Code, ContractError, SurfaceEvent, check_event_payload

from .door import SurfaceRequest

if TYPE_CHECKING:
    from ._app_core import AppCore, SdkFace

log = logging.getLogger("lineup.app")

WEB_HOST: Final = "web_host"
REQUEST: Final = "app.surface.request"
PUSH: Final = "web_host.surface.push"

EventHandler = Callable[[dict[str, Any], str], Awaitable[None] | None]


def _refusal(failed: CallFailed) -> ContractError:
    """The runtime's refusal of what the app asked for the surface, passed on by its code."""
    code = failed.code if failed.code in Code.__members__.values() else Code.FAILED
    return ContractError(Code(code), failed.detail)


class SurfaceAPI:
    def __init__(
        self, app: AppCore, events: dict[str, SurfaceEvent], *, shown: bool = False
    ) -> None:
        self._app = app
        self._events = events  # every event the manifest's surfaces declare
        self._shown = shown  # whether the app has a surface to show at all
        self._handlers: dict[str, list[EventHandler]] = {}
        self._subscribed: set[str] = set()  # instances whose session data goes to the host

    def on_event(self, name: str, handler: EventHandler) -> Callable[[], None]:
        """Call `handler(payload, instance_id)` for each `name` event a surface emits."""
        if name not in self._events:
            raise ValueError(f"the manifest declares no surface event {name!r}")
        self._handlers.setdefault(name, []).append(handler)
        return lambda: self._handlers[name].remove(handler)

    async def patch(self, state: dict[str, Any], *, instance_id: str) -> None:
        """Merge `state` into what the surfaces of `instance_id` show (null removes a key)."""
        self._own(instance_id)
        await self._push({"instance_id": instance_id, "kind": "state", "patch": state})

    # -- the web host's requests -----------------------------------------------------------

    def _own(self, instance_id: object) -> str:
        scope = self._app.sdk.app.app_scope
        if not isinstance(instance_id, str) or not instance_id.startswith(f"{scope}:"):
            raise ContractError(Code.OWNERSHIP_MISMATCH, "instance_id: not this app's")
        return instance_id

    async def _hand_call(self, call: dict[str, Any]) -> None:
        """Offer an open `surface_bridge` call to the surfaces of its instance."""
        await self._push({"kind": "tool_call", **call})

    async def _push(self, body: dict[str, Any]) -> None:
        await self._app.cast(WEB_HOST, PUSH, body, id=self._app._ids.next())

    async def _request(self, msg: Message) -> Any:
        body = dict(msg.body or {})
        instance = self._own(body.get("instance_id"))
        op = body.get("op")
        session = self._app.sdk.session_data
        try:
            if op == "event":
                return await self._event(body, instance)
            if op == "session.get":
                return await session.get(instance_id=instance)
            if op == "session.replace":
                data, expected = body.get("data"), body.get("expected_revision")
                if not isinstance(data, dict) or not isinstance(expected, int):
                    raise ContractError(Code.INVALID_PAYLOAD, "data and expected_revision")
                return await session.replace(data, expected, instance_id=instance)
            if op == "session.subscribe":
                return await self._subscribe(instance)
            if op == "tool.calls":
                return {"calls": self._app.sdk.tools._surface_calls(instance)}
            if op in ("tool.result", "tool.error", "tool.progress"):
                await self._app.sdk.tools._surface_answer(instance, op, body)
                return {"ok": True}
        except CallFailed as failed:
            raise _refusal(failed) from None
        if op == "capability":
            self._app.nursery.start_soon(self._capability, msg, body)
            return REPLY_LATER
        raise ContractError(Code.UNKNOWN_TYPE, f"op {str(op)[:40]!r}")

    async def _event(self, body: dict[str, Any], instance: str) -> dict[str, Any]:
        name, payload = body.get("name"), body.get("payload")
        event = self._events.get(name) if isinstance(name, str) else None
        if event is None:
            raise ContractError(Code.UNKNOWN_TYPE, f"event {str(name)[:64]!r} is not declared")
        check_event_payload(event, payload)
        for handler in list(self._handlers.get(event.name, ())):
            try:
                value = handler(dict(payload or {}), instance)
                if inspect.isawaitable(value):
                    await value
            except Exception:
                # The app's handler broke: its log has the traceback, the surface a code,
                # and the mailbox goes on (the event is not offered again).
                log.exception("the handler of surface event %r failed", event.name)
                raise ContractError(Code.HANDLER_FAILED, f"event {event.name!r}") from None
        return {"ok": True}

    async def _session_changed(self, instance: str) -> None:
        """The instance's session data changed: pushed to its surfaces from now on, if no
        surface has subscribed in this process yet (see above); an app without surfaces
        pushes nothing."""
        if not self._shown or instance in self._subscribed:
            return
        try:
            await self._subscribe(instance)
        except CallFailed as exc:  # the instance closed meanwhile: nothing shows it
            log.info("session data of %s not pushed: %s", instance, exc.code)

    async def _subscribe(self, instance: str) -> dict[str, Any]:
        if instance not in self._subscribed:
            self._subscribed.add(instance)

            async def forward(snapshot: dict[str, Any]) -> None:
                await self._push({"instance_id": instance, "kind": "session", **snapshot})

            await self._app.sdk.session_data.subscribe(forward, instance_id=instance)
        # A surface that subscribes again (reloaded) starts from the whole snapshot.
        return dict(await self._app.sdk.session_data.get(instance_id=instance))

    async def _capability(self, msg: Message, body: dict[str, Any]) -> None:
        """The gateway may wait for the user: answered later, the mailbox goes on."""
        outcome = await self._app.sdk.capabilities.request(
            str(body.get("capability")),
            str(body.get("purpose")),
            body.get("input"),
            request_id=f"surface-{msg.id}",
        )
        await self._app.reply(msg.sender, msg.id, outcome)


def _entrypoints(app_class: type[Any]) -> list[dict[str, Any]]:
    from ._declare import manifest_of  # noqa: PLC0415 - _declare imports the app's base

    try:
        return list(manifest_of(app_class)["entrypoints"])
    except TypeError:  # not declared with @declare_app: it has no surface
        return []


def declares_surface(app_class: type[Any]) -> bool:
    """Whether a declared app has a surface at all."""
    return any(entry.get("surface") for entry in _entrypoints(app_class))


def declared_events(app_class: type[Any]) -> dict[str, SurfaceEvent]:
    """The events the surfaces of a declared app may emit (none for an undeclared class)."""
    events = {}
    for entry in _entrypoints(app_class):
        for raw in entry.get("surface_events") or ():
            event = SurfaceEvent.model_validate(raw)
            events[event.name] = event
    return events


class SurfaceInbox(Actor):
    """The app process's handler of the web host's relays (mixed into `RuntimeApp`)."""

    sdk: SdkFace
    _from: Callable[..., None]
    _ids: Any

    @handles(REQUEST)
    async def _surface_request(self, msg: Message[SurfaceRequest]) -> Any:
        self._from(msg, WEB_HOST)  # a surface speaks only through the web host's checks
        with self._ids.deriving(msg.id):
            return await self.sdk.surface._request(msg)
