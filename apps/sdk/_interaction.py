"""`sdk.interaction`: what the Interaction App (the chat) keeps of a conversation besides
what the agent and the user said, in its own log and shown in its view model.

- `set_mode(conversation_id, mode, by=...)`: the conversation's mode, `im` (text) or
  `audio` (the agent's messages spoken, the user's spoken ones written out); recorded only
  when it changes. `by` says whose choice it was: `user`, or `default` (the setting a new
  conversation starts with).
- `add_speech(conversation_id, message_id, part, artifact, duration_ms)`: a part of an agent
  message, spoken: the reference of the WAV artifact the capability gateway made of it.

Each is recorded once under an id of the handler that records it (derived from the message
handled, like any id the SDK takes there), so a replay records nothing twice.

What the runtime hands the Interaction App for its audio mode arrives through its inbox
(`InteractionInbox`) and is the app's to act on (`RuntimeApp.on_recorded`,
`.on_interaction_settings`): a push-to-talk recording (`app.interaction.recorded`, from the
capability gateway only) and the setting a new conversation's mode comes from
(`app.interaction.settings`, from the operator and the settings app only).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Literal

from actors.kernel import Actor, Message, handles

from .door import InteractionSettings, Recorded

if TYPE_CHECKING:
    from ._app_core import AppCore

MODES: Final = ("im", "audio")
Mode = Literal["im", "audio"]


class InteractionAPI:
    def __init__(self, app: AppCore) -> None:
        self._app = app

    def mode(self, conversation_id: str) -> str | None:
        """The mode recorded for the conversation; None when none was."""
        view = self._app._views.conversations.get(conversation_id)
        return view.mode if view is not None else None

    async def set_mode(self, conversation_id: str, mode: Mode, *, by: str = "user") -> bool:
        """Record the conversation's mode; False when it is that already."""
        if mode not in MODES:
            raise ValueError(f"mode: one of {', '.join(MODES)}")
        if self.mode(conversation_id) == mode:
            return False
        body = {"conversation_id": conversation_id, "mode": mode, "by": by}
        return await self._record("mode", conversation_id, body)

    async def add_speech(
        self,
        conversation_id: str,
        message_id: str,
        part: int,
        artifact: dict[str, Any],
        duration_ms: int,
    ) -> bool:
        """Record part `part` of the agent message `message_id` as spoken (`artifact`)."""
        body = {
            "conversation_id": conversation_id,
            "message_id": message_id,
            "part": part,
            "artifact": artifact,
            "duration_ms": duration_ms,
        }
        return await self._record("speech", conversation_id, body)

    async def _record(self, kind: str, conversation_id: str, body: dict[str, Any]) -> bool:
        app = self._app
        event_id = app._ids.next()
        if not app._log.add_interaction_event(event_id, kind, conversation_id, body):
            return False
        await app._apply({"kind": kind, "conversation_id": conversation_id, "body": body})
        return True


class InteractionInbox(Actor):
    """The app process's handlers of what the runtime hands the Interaction App (mixed into
    `RuntimeApp`)."""

    _from: Callable[..., None]
    _ids: Any
    on_recorded: Callable[[dict[str, Any]], Awaitable[None]]
    on_interaction_settings: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]

    @handles("app.interaction.recorded")
    async def _interaction_recorded(self, msg: Message[Recorded]) -> None:
        self._from(msg, "capability_gateway")  # the gateway kept it; nobody else's word
        with self._ids.deriving(msg.id):
            await self.on_recorded(dict(msg.body))

    @handles("app.interaction.settings")
    async def _interaction_settings(self, msg: Message[InteractionSettings]) -> Any:
        self._from(msg, "debug", "app.settings")
        return await self.on_interaction_settings(dict(msg.body))
