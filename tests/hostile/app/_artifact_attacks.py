"""The hostile app against the artifact store: another app's artifact read, listed or
described; one made in a conversation that is not its own, or in another app's name by a
field of the body; a type only the runtime's actors may send."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from actors.kernel import CallFailed, new_id

if TYPE_CHECKING:
    from ._app import HostileApp

STORE = "store"
NOBODYS = "art_" + "0" * 26  # the shape of an artifact id, naming none


async def _outcome(attempt: Awaitable[Any]) -> str:
    try:
        await attempt
    except CallFailed as exc:
        return f"refused:{exc.code}"
    return "accepted"


async def steal_artifact(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Once the test names another app's artifact and a conversation only that app is in:
    make one artifact of its own, then try to read, describe and make artifacts as that
    app."""
    order = await app.order("steal_artifact")
    own = await app.sdk.artifacts.create(b"mine", "text/plain", "mine", "conv-1")
    victim, elsewhere = str(order["victim"]), str(order["conversation"])
    artifacts = app.sdk.artifacts
    outcomes = {
        "read victim": await _outcome(artifacts.read(victim)),
        "read nobody's": await _outcome(artifacts.read(NOBODYS)),
        "read own": await _outcome(artifacts.read(own["artifact_id"])),
        "create elsewhere": await _outcome(
            artifacts.create(b"x", "text/plain", "x", conversation_id=elsewhere)
        ),
        "create as toolbox": await app.attempt(
            STORE,
            "store.artifacts.create",
            {"data": b"x", "media_type": "text/plain", "title": "x", "app_scope": "toolbox"},
        ),
        "create replaceable": await app.attempt(
            STORE,
            "store.artifacts.create",
            {"data": b"x", "media_type": "text/plain", "title": "x", "replaceable": True},
        ),
        "keep replaceable": await app.attempt(
            STORE,
            "store.artifacts.keep",
            {
                "data": b"x",
                "media_type": "audio/wav",
                "title": "x",
                "app_scope": "chat",
                "replaceable": True,
            },
        ),
        "create with a sender": await app.attempt(
            STORE,
            "store.artifacts.create",
            {"data": b"x", "media_type": "text/plain", "title": "x", "sender": "app.toolbox"},
        ),
        "describe victim": await app.attempt(
            STORE, "store.artifacts.meta", {"artifact_id": victim}
        ),
        "save as the user": await app.attempt(
            "capability_gateway", "capability_gateway.save_artifact", {"artifact_id": victim}
        ),
        "list as toolbox": await app.attempt(
            STORE, "store.artifacts.list", {"app_scope": "toolbox"}
        ),
    }
    # Then a flood of creates the store refuses, as casts: each refused, few audited.
    flood = int(order.get("flood", 0))
    refused = {"data": b"x" * 1024, "media_type": "text/plain", "title": "x"}
    for n in range(flood):
        await app.cast(STORE, "store.artifacts.create", {**refused, "conversation_id": f"c{n}"})
    outcomes["after the flood"] = await _outcome(
        artifacts.create(b"x", "text/plain", "x", conversation_id=elsewhere)
    )
    listed = [row["artifact_id"] for row in await artifacts.list()]
    # A page "after" another app's artifact starts where one after nobody's does: at the
    # first of its own.
    pages = {
        name: await app.call(
            STORE, "store.artifacts.list", {"after": after}, timeout=10, id=new_id()
        )
        for name, after in (("after victim", victim), ("after nobody's", NOBODYS))
    }
    return {
        "own": own,
        "outcomes": outcomes,
        "listed": listed,
        "pages": {
            name: [r["artifact_id"] for r in page["artifacts"]] for name, page in pages.items()
        },
    }
