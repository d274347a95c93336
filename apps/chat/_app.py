"""The chat core app: the Interaction App in its IM form, on the SDK only.

It shows the conversation's timeline, tasks and pending interactions (the SDK's view
model), turns the user's input into declarative actions (`send_text`, `answer`), and
acknowledges an interaction request once the user has answered it; display messages are
acknowledged by the SDK after delivery.
"""

from __future__ import annotations

from typing import Any

from apps.sdk import RuntimeApp, declare_app

from ._consent import consent_input


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
    ],
)
class ChatApp(RuntimeApp):
    # The view model is all the chat shows, so it subscribes to no message itself: display
    # messages are acknowledged by the SDK, a request once the user has answered it.

    async def on_input(self, body: dict[str, Any]) -> None:
        """`{"kind": "send", "conversation_id", "text"}` or `{"kind": "answer",
        "conversation_id", "interaction_id", "selected" | "confirmed" | "text"}`; an answer
        to a capability consent card, or `{"kind": "dismiss", "conversation_id",
        "interaction_id"}`, goes to the capability gateway (`_consent`)."""
        if await consent_input(self.sdk, body):  # a consent card's answer: the runtime's
            return
        conversation = body.get("conversation_id")
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
                return  # answered already, or never asked: nothing to send
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
            await self.sdk.actions.dispatch(
                {
                    "action": "answer",
                    "conversation_id": conversation,
                    "response": response,
                    "reply_to": request["message_id"],
                }
            )
            await self.sdk.agent_messages.acknowledge(request["message_id"])
