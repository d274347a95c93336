"""The user's answer to a capability consent card: it goes to the capability gateway, never
to the agent. A card is a question the runtime asked (`origin: runtime` in the view), so the
chat answers it with `sdk.capabilities.answer`; it leaves the view when the gateway closes
it, whoever or whatever decided the request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from apps.sdk import SDK

ANSWERS: Final = frozenset({"once", "session", "always", "deny"})


async def consent_input(sdk: SDK, body: dict[str, Any]) -> bool:
    """Take `body` if it answers (`answer`) or dismisses (`dismiss`) an open consent card;
    False for any other input, which is the agent's business."""
    kind = body.get("kind")
    if kind not in ("answer", "dismiss"):
        return False
    view = sdk.state.snapshot(str(body.get("conversation_id")))
    card = next(
        (
            waiting
            for waiting in view["pending_interactions"]
            if waiting["interaction_id"] == body.get("interaction_id")
            and waiting.get("origin") == "runtime"
        ),
        None,
    )
    if card is None:
        return bool(kind == "dismiss")  # only a consent card can be dismissed: nothing sent
    selected = list(body.get("selected") or [])
    if kind == "dismiss":
        answer = "dismiss"
    elif len(selected) == 1 and selected[0] in ANSWERS:
        answer = str(selected[0])
    else:
        return True  # not one of the card's answers: nothing to send
    await sdk.capabilities.answer(str(card["interaction_id"]), answer)
    return True
