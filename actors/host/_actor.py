"""UI sessions, UI actions and host lifecycle intents: checked, audited, passed on.

What each message is for (its senders and body are its door's: docs/messages.md):

| message | effect |
|---|---|
| `host.session.open` | the session is known; audited |
| `host.session.close` | the session is gone; audited |
| `host.ui.action` | `app.input` to `app.<scope>` |
| `host.intent` | `app_manager.host_intent` |
| `host.file.chosen` | to the gateway |
| `host.recording.stop` | the gateway's recording stops |

Every one is accepted only from a UI session (`ui`, a `host.*` request on the supervisor's
UI socket) or the operator (`debug`), and audited in the store with its own code
(`ui.action`, `host.intent`, `host.session.*`, `ui.file_chosen`, `ui.recording_stop`), so
the audit tells a user's action from an agent's. A file chosen is the terminal chat's answer
to a `file.open` request (`/attach PATH`): the bytes the user's own process read, passed to
the capability gateway (`capability_gateway.file_chosen`), which decides what they are and
whether the request takes them. A refused one is audited with the code of its refusal: the
UI socket has already answered the UI by then, and the audit is where the UI looks
(`lineup debug` and the terminal chat show it).

Sessions live in memory: a UI session is a live attachment, and after a restart of the
host a UI simply opens its session again (an action naming an unknown session is still
passed on, with the session noted as unknown, because the action itself is durable and
the user meant it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Final, TypeVar

import msgpack

from actors.kernel import Actor, Message, handles
from contracts import FILE_OPEN_MAX_BYTES, SCOPE_CHAT, Code, ContractError

from .door import DOOR

log = logging.getLogger("lineup.host")

HOST_SOURCES: Final = frozenset({"ui", "debug"})
SESSION_ID: Final = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
SESSION_KINDS: Final = frozenset({"terminal", "web"})
HOST_INTENTS: Final = frozenset(
    {"foreground", "background", "open_app", "focus_app", "close_app", "open_default_app"}
)
MAX_INPUT_BYTES: Final = 64 * 1024
REQUEST_KEY: Final = re.compile(r"^[a-z0-9_.-]{1,64}/[A-Za-z0-9_.:-]{1,80}$")
MAX_NAME: Final = 1024
MAX_MEDIA_TYPE: Final = 255
T = TypeVar("T")


def _invalid(detail: str) -> ContractError:
    return ContractError(Code.INVALID_PAYLOAD, detail)


def _session_of(body: Any) -> str:
    if not isinstance(body, dict):
        raise _invalid("the body must be a map")
    session = body.get("session_id")
    if not isinstance(session, str) or not SESSION_ID.match(session):
        raise _invalid(f"session_id: {session!r} is not a session id")
    return session


def _session_open(body: Any) -> tuple[str, str]:
    session = _session_of(body)
    kind = body.get("kind", "terminal")
    if kind not in SESSION_KINDS:
        raise _invalid(f"kind: {kind!r} is not a session kind")
    return session, kind


def _ui_action(body: Any, ui_apps: frozenset[str]) -> tuple[str, str, dict[str, Any]]:
    session = _session_of(body)
    app = body.get("app_scope", "chat")
    if app not in ui_apps:
        raise ContractError(Code.APP_NOT_INSTALLED, f"no app {app!r} with a UI to act in")
    action = body.get("input")
    if not isinstance(action, dict) or not isinstance(action.get("kind"), str):
        raise _invalid("input: a map with a 'kind' is needed")
    if len(msgpack.packb(action)) > MAX_INPUT_BYTES:
        raise ContractError(Code.TOO_LARGE, f"input over {MAX_INPUT_BYTES} bytes")
    return session, app, action


def _recording_stop(body: Any) -> tuple[str, str]:
    session = _session_of(body)
    request = body.get("request_id")
    if not isinstance(request, str) or not REQUEST_KEY.match(request):
        raise _invalid(f"request_id: {str(request)[:80]!r} is not a request's key")
    return session, request


def _intent(body: Any) -> tuple[str, str, str | None]:
    session = _session_of(body)
    intent = body.get("intent")
    if intent not in HOST_INTENTS:
        raise _invalid(f"intent: {intent!r} is not an intent")
    app = body.get("app_scope")
    if app is not None and not isinstance(app, str):
        raise _invalid("app_scope: a string is needed")
    return session, intent, app


def _file_chosen(body: Any) -> tuple[str, dict[str, Any]]:
    session = _session_of(body)
    request, name = body.get("request_id"), body.get("name")
    media_type, data = body.get("media_type", ""), body.get("data")
    if not isinstance(request, str) or not REQUEST_KEY.match(request):
        raise _invalid(f"request_id: {str(request)[:80]!r} is not a request's key")
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME:
        raise _invalid(f"name: a file name of 1 to {MAX_NAME} characters is needed")
    if not isinstance(media_type, str) or len(media_type) > MAX_MEDIA_TYPE:
        raise _invalid(f"media_type: a string of at most {MAX_MEDIA_TYPE} characters")
    if not isinstance(data, bytes):
        raise _invalid("data: the file's bytes are needed")
    if len(data) > FILE_OPEN_MAX_BYTES:
        raise ContractError(Code.TOO_LARGE, f"a file over {FILE_OPEN_MAX_BYTES} bytes")
    chosen = {"request_id": request, "name": name, "media_type": media_type, "data": data}
    return session, chosen


class HostActor(Actor):
    """The user's side: one entry for UI actions, one for host lifecycle intents."""

    door = DOOR

    async def on_start(self) -> None:
        # The apps with a UI the host may address; the app manager will own this list.
        self.ui_apps = frozenset(self.config.get("ui_apps", [SCOPE_CHAT]))
        self.sessions: dict[str, str] = {}
        self.actions = 0
        self.intents = 0
        self.files = 0
        self.refused = 0

    def statistics_extra(self) -> dict[str, Any]:
        return {
            "sessions": dict(self.sessions),
            "ui_actions": self.actions,
            "host_intents": self.intents,
            "files_chosen": self.files,
            "refused": self.refused,
        }

    async def _audit(self, code: str, detail: str, msg: Message) -> None:
        await self.cast(
            "store", "store.audit", {"code": code, "detail": detail, "message_id": msg.id}
        )

    async def _checked(self, msg: Message, parse: Callable[[], T]) -> T:
        """`parse()`'s result; a refusal (wrong source, bad body) is audited, then answered
        with its code."""
        try:
            if msg.sender not in HOST_SOURCES:
                raise ContractError(  # noqa: TRY301 - one path for every refusal
                    Code.SENDER_NOT_ALLOWED, f"{msg.sender!r} is not a UI session or the operator"
                )
            return parse()
        except ContractError as refusal:
            self.refused += 1
            log.warning("refused %s %s from %s: %s", msg.type, msg.id, msg.sender, refusal)
            await self._audit(str(refusal.code), f"{msg.type}: {refusal.detail}", msg)
            raise

    @handles("host.session.open")
    async def session_open(self, msg: Message) -> None:
        session, kind = await self._checked(msg, lambda: _session_open(msg.body))
        self.sessions[session] = kind
        await self._audit("host.session.open", f"{kind} session {session}", msg)

    @handles("host.session.close")
    async def session_close(self, msg: Message) -> None:
        session = await self._checked(msg, lambda: _session_of(msg.body))
        self.sessions.pop(session, None)
        await self._audit("host.session.close", f"session {session}", msg)

    @handles("host.ui.action")
    async def ui_action(self, msg: Message) -> None:
        """A user's action in an app's UI, handed to that app's process as `app.input`."""
        session, app, action = await self._checked(msg, lambda: _ui_action(msg.body, self.ui_apps))
        self.actions += 1
        known = "" if session in self.sessions else " (session not open)"
        await self._audit("ui.action", f"{action['kind']} in {app} by {session}{known}", msg)
        await self.cast(f"app.{app}", "app.input", {**action, "ui_session": session})

    @handles("host.file.chosen")
    async def file_chosen(self, msg: Message) -> None:
        """A file the user chose in a terminal for an app's `file.open` request, handed to
        the capability gateway, which takes it or tells why not (its audit)."""
        session, chosen = await self._checked(msg, lambda: _file_chosen(msg.body))
        self.files += 1
        size = len(chosen["data"])
        detail = f"{chosen['name']!r} ({size} bytes) for {chosen['request_id']} by {session}"
        await self._audit("ui.file_chosen", detail, msg)
        await self.cast(
            "capability_gateway",
            "capability_gateway.file_chosen",
            {**chosen, "chooser": "terminal"},
        )

    @handles("host.recording.stop")
    async def recording_stop(self, msg: Message) -> None:
        """The user's stop of a recording the gateway makes from the sound server (the
        terminal chat's `/stop` while it records), handed to the gateway."""
        session, request = await self._checked(msg, lambda: _recording_stop(msg.body))
        await self._audit("ui.recording_stop", f"{request} by {session}", msg)
        await self.cast(
            "capability_gateway", "capability_gateway.record_stop", {"request_id": request}
        )

    @handles("host.intent")
    async def intent(self, msg: Message) -> None:
        """A host lifecycle intent (the window came to the front, open this app, ...)."""
        session, intent, app = await self._checked(msg, lambda: _intent(msg.body))
        self.intents += 1
        await self._audit("host.intent", f"{intent} {app or ''} by {session}".strip(), msg)
        await self.cast(
            "app_manager",
            "app_manager.host_intent",
            {"intent": intent, "app_scope": app, "session_id": session},
        )
