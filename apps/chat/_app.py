"""The chat core app: the Interaction App in its IM form, on the SDK only.

It shows the conversation's timeline, tasks and pending interactions (the SDK's view
model), turns the user's input into declarative actions (`send_text`, `answer`) and into
stops of the agent's open tool calls (`stop`: the user's interrupt), and
acknowledges an interaction request once the user has answered it; display messages are
acknowledged by the SDK after delivery, and a request the agent withdrew by its
withdrawal. An answer to a withdrawn question is shown refused (`withdrawn`), never sent.
"""

from __future__ import annotations

from typing import Any

from actors.contracts import Code
from apps.sdk import RuntimeApp, declare_app

from ._consent import consent_input
from ._notices import ViewNotices


@declare_app(
    app_scope="chat",
    version="1.0.0",
    title="Chat",
    kind="core",
    entrypoints=[{"id": "im", "kind": "primary", "default_eligible": True}],
    required_features=["app.lifecycle.v1", "agent.messages.v1", "app.actions.v1"],
    # What the agent says to the user; the router delivers the chat nothing else.
    agent_subscriptions=[
        {"type": "lineup.message", "scope": "conversation"},
        {"type": "lineup.task.progress", "scope": "conversation"},
        {"type": "lineup.interaction.request", "scope": "conversation"},
        {"type": "lineup.interaction.withdraw", "scope": "conversation"},
    ],
)
class ChatApp(RuntimeApp):
    # The view model is all the chat shows, so it subscribes to no message itself: display
    # messages are acknowledged by the SDK, a request once the user has answered it.

    async def on_app_start(self) -> None:
        # A web host that shows this view hears when it changed, and reads it itself.
        watcher = self.config.get("view_watcher")
        if isinstance(watcher, str) and watcher:
            notices = ViewNotices(self, watcher)
            self.sdk.state.subscribe(notices.changed)
            self.nursery.start_soon(notices.run)

    async def on_input(self, body: dict[str, Any]) -> None:
        """`{"kind": "send", "conversation_id", "text"}`, `{"kind": "answer",
        "conversation_id", "interaction_id", "selected" | "confirmed" | "text"}` or
        `{"kind": "stop", "conversation_id", "call_id"}`; an answer to a capability
        consent card, or `{"kind": "dismiss", "conversation_id", "interaction_id"}`, goes to
        the capability gateway (`_consent`)."""
        if await consent_input(self.sdk, body):  # a consent card's answer: the runtime's
            return
        conversation = body.get("conversation_id")
        if body.get("kind") == "stop":
            await self._stop(str(conversation), str(body.get("call_id")))
            return
        if body.get("kind") == "send":
            await self.sdk.actions.dispatch(
                {
                    "action": "send_text",
                    "conversation_id": conversation,
                    "text": body.get("text", ""),
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
