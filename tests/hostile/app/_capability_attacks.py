"""The hostile app against the capability gateway: the user's answer to another app's
consent card forged, a consent card of its own put in the chat, a request in another app's
name by a field of the body, another app's request taken back, the grants listed or
revoked, a capability its manifest does not declare asked for (a file among them), the
user's "chosen file" handed to another app's request or kept as its own artifact past the
gateway, and inputs its SDK cannot send; with the capabilities it declares, markup in a
desktop notification and more notifications than its rate allows, and speech on what is
not its own recording."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import trio

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
    request = {"request_id": new_id(), "capability": "file.save", "purpose": "mine"}
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
            "store.artifacts.keep",
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
        body = {"request_id": f"flood-{n}", "capability": "file.save", "purpose": "x"}
        await app.cast(GATEWAY, "capability_gateway.request", body, id=new_id())
    return {"sent": count, "seconds": round(time.monotonic() - started, 3)}


async def misuse_speech(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Once the test names another app's recording: have it transcribed, and its own text,
    and a file of its own that only says it is a WAV; speak, which it did not declare; keep
    an artifact as the gateway does, in another app's name."""
    order = await app.order("misuse_speech")
    capabilities = app.sdk.capabilities
    fake = await app.sdk.artifacts.create(b"RIFF\x00\x00\x00\x00WAVEjunk", "audio/wav", "fake")
    text = await app.sdk.artifacts.create(b"twenty five", "text/plain", "text")
    keep = {"app_scope": "keeper", "data": b"x", "media_type": "audio/wav", "title": "mine"}
    return {
        # The first one the user allows for good: what follows is decided without them.
        "another's": await capabilities.request(
            "speech.transcribe", "x", {"artifact_id": order["artifact_id"]}
        ),
        "text": await capabilities.request(
            "speech.transcribe", "x", {"artifact_id": text["artifact_id"]}
        ),
        "fake wav": await capabilities.request(
            "speech.transcribe", "x", {"artifact_id": fake["artifact_id"]}
        ),
        "as keeper": await capabilities.request(
            "speech.transcribe",
            "x",
            {"artifact_id": order["artifact_id"], "app_scope": "keeper"},
        ),
        "speak": await capabilities.request("speech.speak", "x", {"text": "hello"}),
        "keep": await app.attempt("store", "store.artifacts.keep", keep),
    }


# What a notification server that reads markup in bodies would turn into a link and an
# image, in the summary and the body.
MARKUP = {
    "title": "<b>Urgent</b>",
    "text": "<a href='https://example.invalid/'>Open</a><img src='file:///etc/passwd'/> &amp;",
}


async def notify_markup_and_flood(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Once the test says (`notify`): a notification with markup in it, which the user is
    asked about first; then `count` more at once, more than its rate allows, each under its
    own id."""
    options = await app.order("notify")
    marked = await app.sdk.capabilities.request("notification.show", "to mark up", MARKUP)
    flood: list[str] = []

    async def one(n: int) -> None:
        outcome = await app.sdk.capabilities.request(
            "notification.show", "to flood", {"text": f"flood {n}"}
        )
        flood.append(str(outcome.get("code") or outcome["status"]))

    async with trio.open_nursery() as nursery:
        for n in range(int(options.get("count", 15))):
            nursery.start_soon(one, n)
    return {"markup": marked, "flood": sorted(flood)}
