"""The chat core app: the Interaction App, in its IM mode and its audio mode, on the SDK only.

It shows the conversation's timeline, tasks and pending interactions (the SDK's view
model), turns the user's input into declarative actions (`send_text`, `answer`) and into
stops of the agent's open tool calls (`stop`: the user's interrupt), and
acknowledges an interaction request once the user has answered it; display messages are
acknowledged by the SDK after delivery, and a request the agent withdrew by its
withdrawal. An answer to a withdrawn question is shown refused (`withdrawn`), never sent.

Each conversation has a mode, `im` or `audio`, which the user switches (`mode`); a new one
starts in the user's default (`app.interaction.settings`, `_default_mode`). Every message the user
sends says the mode it was sent in; in audio mode the agent's messages are spoken and the
user's push-to-talk recordings written out and sent (`_voice`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from apps.sdk import ConversationView, RuntimeApp, declare_app
from contracts import Code

from ._consent import consent_input
from ._default_mode import MODES, read_default_mode, write_default_mode
from ._notices import ViewNotices
from ._voice import Speaker, recorded


@declare_app(
    app_scope="chat",
    version="1.0.0",
    title="Chat",
    kind="core",
    entrypoints=[{"id": "im", "kind": "primary", "default_eligible": True}],
    required_features=[
        "app.lifecycle.v1",
        "agent.messages.v1",
        "app.actions.v1",
        "capability.request.v1",
    ],
    # What the agent says to the user; the router delivers the chat nothing else.
    agent_subscriptions=[
        {"type": "lineup.message", "scope": "conversation"},
        {"type": "lineup.task.progress", "scope": "conversation"},
        {"type": "lineup.interaction.request", "scope": "conversation"},
        {"type": "lineup.interaction.withdraw", "scope": "conversation"},
    ],
    # Its audio mode: the user's push-to-talk recording, written out; the agent's words said.
    capabilities=["audio.record", "speech.transcribe", "speech.speak"],
)
class ChatApp(RuntimeApp):
    # The view model is what the chat shows: display messages are acknowledged by the SDK,
    # a request once the user has answered it. It listens to the agent's messages only to
    # speak them in audio mode.

    async def on_app_start(self) -> None:
        # A web host that shows this view hears when it changed, and reads it itself.
        watcher = self.config.get("view_watcher")
        if isinstance(watcher, str) and watcher:
            notices = ViewNotices(self, watcher)
            self.sdk.state.subscribe(notices.changed)
            self.nursery.start_soon(notices.run)
        self.app_dir = Path(str(self.config["app_dir"]))
        self.default_mode = await trio.to_thread.run_sync(read_default_mode, self.app_dir)
        self.sdk.state.subscribe(self._begun)
        self.speaker = Speaker(self.sdk)
        self.sdk.agent_messages.subscribe(self.speaker.heard, types=("lineup.message",))
        self.nursery.start_soon(self.speaker.run)

    def statistics_extra(self) -> dict[str, Any]:
        extra = super().statistics_extra()
        if hasattr(self, "speaker"):
            extra["speech"] = {"spoken": self.speaker.spoken, "unspoken": self.speaker.unspoken}
        return extra

    async def _begun(self, view: ConversationView, change: dict[str, Any]) -> None:
        """A conversation's first event: it starts in the user's default mode (`im` is the
        mode of one that has none recorded, so only `audio` is recorded)."""
        conversation = view.conversation_id
        if view.applied != 1 or view.mode is not None or ":" in conversation:
            return  # not new, or the runtime's own conversation: no interaction there
        if self.default_mode == "audio":
            await self.sdk.interaction.set_mode(conversation, "audio", by="default")

    async def on_recorded(self, body: dict[str, Any]) -> None:
        """What the user recorded with push-to-talk: written out and sent (`_voice`)."""
        await recorded(self.sdk, body)

    async def on_interaction_settings(self, body: dict[str, Any]) -> dict[str, Any]:
        """The mode new conversations start in: {`default_mode`?} sets it; the answer is the
        setting in force. The operator's (`lineup settings mode`) or the settings app's."""
        mode = body.get("default_mode")
        if mode in MODES and mode != self.default_mode:
            await trio.to_thread.run_sync(write_default_mode, self.app_dir, mode)
            self.default_mode = str(mode)
        return {"default_mode": self.default_mode}

    async def on_input(self, body: dict[str, Any]) -> None:
        """`{"kind": "send", "conversation_id", "text"}`, `{"kind": "answer",
        "conversation_id", "interaction_id", "selected" | "confirmed" | "text"}`,
        `{"kind": "stop", "conversation_id", "call_id"}` or `{"kind": "mode",
        "conversation_id", "mode": "im" | "audio"}`; an answer to a capability
        consent card, or `{"kind": "dismiss", "conversation_id", "interaction_id"}`, goes to
        the capability gateway (`_consent`)."""
        if await consent_input(self.sdk, body):  # a consent card's answer: the runtime's
            return
        conversation = body.get("conversation_id")
        if body.get("kind") == "stop":
            await self._stop(str(conversation), str(body.get("call_id")))
            return
        if body.get("kind") == "mode":
            mode = body.get("mode")
            if mode in MODES and isinstance(conversation, str) and ":" not in conversation:
                await self.sdk.interaction.set_mode(conversation, mode, by="user")
            return
        if body.get("kind") == "send":
            await self.sdk.actions.dispatch(
                {
                    "action": "send_text",
                    "conversation_id": conversation,
                    "text": body.get("text", ""),
                    "mode": self.sdk.interaction.mode(str(conversation)) or "im",
                }
            )
        elif body.get("kind") == "answer":
            view = self.sdk.state.snapshot(str(conversation))
            request = next(
                (
                    i
                    for i in view["pending_interactions"]
                    if i["interaction_id"] == body.get("interaction_id")
                ),
                None,
            )
            if request is None:
                await self._late_answer(str(conversation), body)
                return
            await self.sdk.actions.dispatch(
                {
                    "action": "answer",
                    "conversation_id": conversation,
                    "response": _response(request, body),
                    "reply_to": request["message_id"],
                }
            )
            await self.sdk.agent_messages.acknowledge(request["message_id"])

    async def _late_answer(self, conversation: str, body: dict[str, Any]) -> None:
        """An answer to a question that is not open. One the agent withdrew is refused
        `withdrawn` where the user sees it (they answered while it went away: a page that
        was cut off, a card not yet redrawn), and nothing is sent; an answer to a question
        answered already, or never asked, is dropped."""
        view = self.sdk.state.snapshot(conversation)
        asked = next(
            (
                item
                for item in reversed(view["timeline"])
                if item["kind"] == "interaction"
                and item["interaction"].get("interaction_id") == body.get("interaction_id")
            ),
            None,
        )
        if asked is None or asked["state"] != "withdrawn":
            return
        action = {
            "action": "answer",
            "conversation_id": conversation,
            "response": _response(asked["interaction"], body),
        }
        await self.sdk.actions.refuse(action, Code.WITHDRAWN)

    async def _stop(self, conversation: str, call_id: str) -> None:
        """The user stops a tool call this conversation shows open; one that has ended, or
        that it does not show, is left alone."""
        view = self.sdk.state.snapshot(conversation)
        shown = next(
            (i for i in view["timeline"] if i["id"] == call_id and i["kind"] == "tool"), None
        )
        if shown is not None and shown["state"] not in ("succeeded", "failed"):
            await self.sdk.tools.stop_for_user(call_id)


def _response(request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The answer to `request` the user's input gives (`selected`, `confirmed` or `text`,
    by the question's kind)."""
    response: dict[str, Any] = {
        "interaction_id": request["interaction_id"],
        "kind": request["kind"],
    }
    if request["kind"] == "choice":
        response["selected"] = list(body.get("selected") or [])
    elif request["kind"] == "confirm":
        response["confirmed"] = bool(body.get("confirmed"))
    else:
        response["text"] = str(body.get("text", ""))
    return response
