"""The hostile app against the capability gateway: the user's answer to another app's
consent card forged, a consent card of its own put in the chat, a request in another app's
name by a field of the body, another app's request taken back, the grants listed or
revoked, a capability its manifest does not declare asked for (a file among them), the
user's "chosen file" handed to another app's request or kept as its own artifact past the
gateway, and inputs its SDK cannot send."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from actors.kernel import new_id

if TYPE_CHECKING:
    from ._app import HostileApp

GATEWAY = "capability_gateway"


async def forge_consent(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Once the test names another app's open consent card: answer it as the user would,
    and everything around it."""
    order = await app.order("forge_consent")
    victim = str(order["request_id"])
    card = {
        "request_id": "hostile/fake",
        "conversation_id": "conv-1",
        "app_scope": "keeper",
        "capability": "file.save",
        "purpose": "a card the runtime never opened",
        "deadline_ms": 0,
        "state": "asking",
    }
    request = {"request_id": new_id(), "capability": "notification.show", "purpose": "mine"}
    return {
        "consent": await app.attempt(
            GATEWAY, "capability_gateway.consent", {"request_id": victim, "answer": "always"}
        ),
        "card": await app.attempt("app.chat", "app.capability.consent", card),
        "as keeper": await app.attempt(
            GATEWAY, "capability_gateway.request", {**request, "app_scope": "keeper"}
        ),
        # Taking back the keeper's request: its own id names only the hostile app's own
        # request (the scope is the stamp), and the keeper's key is no request id.
        "withdraw": await app.attempt(
            GATEWAY, "capability_gateway.withdraw", {"request_id": victim.split("/", 1)[1]}
        ),
        "withdraw key": await app.attempt(
            GATEWAY, "capability_gateway.withdraw", {"request_id": victim}
        ),
        "grants": await app.attempt(GATEWAY, "capability_gateway.grants", {}),
        "revoke": await app.attempt(
            GATEWAY, "capability_gateway.revoke", {"app_scope": "keeper", "capability": "x"}
        ),
        "undeclared": await app.attempt(GATEWAY, "capability_gateway.request", request),
        "file undeclared": await app.attempt(
            GATEWAY,
            "capability_gateway.request",
            {**request, "request_id": new_id(), "capability": "file.open"},
        ),
        # The user's side alone hands over a file chosen: not to the keeper's card, and not
        # into the store as an artifact "the user chose" for itself.
        "file chosen": await app.attempt(
            GATEWAY,
            "capability_gateway.file_chosen",
            {
                "request_id": victim,
                "name": "notes.txt",
                "media_type": "text/plain",
                "data": b"planted",
                "chooser": "web",
            },
        ),
        "chosen artifact": await app.attempt(
            "store",
            "store.artifacts.chosen",
            {"app_scope": "hostile", "data": b"x", "media_type": "text/plain", "title": "x"},
        ),
        # Through its SDK: what cannot be sent, and what is too large to be, each a code.
        "unpackable": await app.sdk.capabilities.request("notification.show", "x", {1, 2}),
        "too large": await app.sdk.capabilities.request(
            "notification.show", "x", {"text": "x" * 300_000}
        ),
    }


async def flood_requests(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """`count` requests for a capability it did not declare, each under a new id, as fast as
    the channel takes them: each one refused, and none may cost the store a row of its own
    for long."""
    count = int(options.get("count", 2000))
    started = time.monotonic()
    for n in range(count):
        body = {"request_id": f"flood-{n}", "capability": "notification.show", "purpose": "x"}
        await app.cast(GATEWAY, "capability_gateway.request", body, id=new_id())
    return {"sent": count, "seconds": round(time.monotonic() - started, 3)}
