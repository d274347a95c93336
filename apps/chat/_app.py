"""The chat core app: the Interaction App in its IM form (seed §4.5), on the SDK only.

It shows the conversation's timeline, tasks and pending interactions (the SDK's view
model), turns the user's input into declarative actions (`send_text`, `answer`), and
acknowledges an interaction request once the user has answered it; display messages are
acknowledged by the SDK after delivery (seed §5.4 rule 3).
"""

from __future__ import annotations

from typing import Any

from apps.sdk import RuntimeApp


class ChatApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.sdk.agent_messages.subscribe(self._on_message)

    async def _on_message(self, message: dict[str, Any]) -> None:
        # Nothing to do beyond the view model for now: a request stays unacknowledged
        # (and pending in the view) until the user answers it.
        return None

    async def on_input(self, body: dict[str, Any]) -> None:
        """`{"kind": "send", "conversation_id", "text"}` or `{"kind": "answer",
        "conversation_id", "interaction_id", "selected" | "confirmed" | "text"}`."""
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
