"""The hostile app against the capability gateway, beside the keeper (both installed from
signed bundles through the CLI) waiting on the user's consent. The hostile app must not
answer the keeper's consent card or take it back, put a card of its own in the chat, ask in
the keeper's name, see or take back the user's grants, or get a capability it did not
declare; the notification it declares it shows only once the user allowed it, within its
rate, and as text on a real desktop (a session bus with dunst, read back from dunst). Every
assertion reads an independent record: runtime.db (requests, grants, audit), mailbox.db,
the chat's own log, dunst's history."""

from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import escape

import trio

from tests.capabilities.conftest import keeper  # noqa: F401 - the signed keeper bundle
from tests.capabilities.helpers import answer, ask, card_for, cards, keeper_ready, outcome
from tests.capabilities.helpers import requests as gateway_requests
from tests.desktop import Desktop, desktop
from tests.runtime.helpers import wait_for
from tests.tools.helpers import Agent

from .app._capability_attacks import MARKUP
from .conftest import Hostile

FLOOD = 2_000  # refused requests, each under an id of its own
FLOODED = 15  # notifications asked for at once, past the rate of 10 at once


async def test_an_app_cannot_answer_anothers_consent_reach_the_grants_or_misuse_notifications(
    hostile: Hostile,
    keeper: tuple[Path, Path],  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    with desktop(tmp_path / "desktop") as shown:
        env = {"DBUS_SESSION_BUS_ADDRESS": shown.bus}
        agent = await keeper_ready(hostile.stack, keeper, env=env)
        await forged_consent_is_refused(hostile, agent)
        await notifications_wait_for_the_user_and_keep_their_rate(hostile, shown)


async def forged_consent_is_refused(hostile: Hostile, agent: Agent) -> None:
    stack = hostile.stack
    await hostile.install({"attacks": ["forge_consent", "notify_markup_and_flood"]})
    await hostile.launch()
    await ask(agent, "h-1", "notification.show", {"text": "from the keeper"})
    victim = await card_for(stack, "notification.show")

    hostile.order("forge_consent", {"request_id": victim})
    result = await wait_for(
        lambda: (hostile.report() or {}).get("results", {}).get("forge_consent"),
        60,
        "the hostile app's capability attacks",
    )
    assert "raised" not in result, result
    # Only the chat app (and the host) may carry the user's answer, only the gateway opens
    # cards, only the settings app and the operator see the grants: refused at the door.
    for attack in ("consent", "card", "grants", "revoke"):
        assert result[attack] == "refused:sender_not_allowed", (attack, result)
    # Its scope is the sender the supervisor stamped: a body naming another app is refused.
    assert result["as keeper"].startswith("refused:invalid_payload"), result
    # It may take back its own requests only: the keeper's id names none of its own, and
    # the keeper's key is no request id at all.
    assert result["withdraw"] == "accepted:null", result
    assert result["withdraw key"] == "refused:invalid_payload", result
    # What its own manifest does not declare, it does not get; that is audited as its own.
    undeclared = json.loads(result["undeclared"].removeprefix("accepted:"))
    assert undeclared == {"status": "permission_denied", "output": None}
    # Through the SDK, an input that is no value or too large is a status and a code.
    assert result["unpackable"] == {"status": "failed", "output": None, "code": "invalid_payload"}
    assert result["too large"] == {"status": "failed", "output": None, "code": "too_large"}

    # The keeper's card is still the user's to answer: no forged answer reached the gateway.
    assert [c["interaction_id"] for c in cards(stack)] == [victim]
    refused_types = {
        row[0]
        for row in hostile.mailbox_rows(
            "SELECT type FROM messages WHERE sender = 'app.hostile'"
            " AND recipient IN ('capability_gateway', 'app.chat')"
        )
    }
    # The rest was never stored.
    assert refused_types == {"capability_gateway.request", "capability_gateway.withdraw"}
    answer(stack, victim, "deny")
    assert (await outcome(stack, "h-1"))["status"] == "permission_denied"
    assert hostile.runtime_rows("SELECT * FROM capability_grants") == []
    by_app = {(r["request_id"].split("/")[0], r["status"]) for r in gateway_requests(stack)}
    assert by_app == {("keeper", "permission_denied"), ("hostile", "permission_denied")}
    audited = [a for a in stack.audit() if a["source"] == "capability_gateway"]
    assert any(
        a["message_id"].startswith("hostile/") and "not declared" in a["detail"] for a in audited
    )


async def notifications_wait_for_the_user_and_keep_their_rate(
    hostile: Hostile, shown: Desktop
) -> None:
    """The one capability it declares, misused: markup in a notification, and more
    notifications at once than its rate allows."""
    stack = hostile.stack
    hostile.order("notify", {"count": FLOODED})
    card = await card_for(stack, "notification.show")
    # Declared is not allowed: nothing reaches the desktop before the user says yes.
    assert await trio.to_thread.run_sync(shown.shown) == []
    answer(stack, card, "session")
    result = await wait_for(
        lambda: (hostile.report() or {}).get("results", {}).get("notify_markup_and_flood"),
        60,
        "the hostile app's notifications",
    )
    assert result["markup"] == {"status": "completed", "output": {"shown": True}}, result
    # Past its rate (10 at once) the rest are refused before anything is shown.
    flood = result["flood"]
    completed, limited = flood.count("completed"), flood.count("rate_limited")
    assert completed + limited == FLOODED and limited >= FLOODED - 10, result
    notes = await trio.to_thread.run_sync(shown.shown, "summary", "body", "message")
    assert len(notes) == 1 + completed
    # The summary is plain text (dunst quotes it); the body is escaped, as dunst reads markup
    # in bodies: what it draws has no tag of the app's, only its own bold around the summary.
    marked = notes[0]
    assert marked["summary"] == f"Hostile: {MARKUP['title']}"
    assert marked["body"] == escape(MARKUP["text"])
    assert marked["message"] == f"<b>{escape(marked['summary'])}</b>\n{marked['body']}"


async def test_a_flood_of_refused_requests_costs_the_store_little_and_others_nothing(
    hostile: Hostile,
    keeper: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    stack = hostile.stack
    agent = await keeper_ready(stack, keeper)
    await hostile.install({"attacks": ["flood_requests"], "flood_requests": {"count": FLOOD}})
    await hostile.launch()
    # While the flood goes on, the keeper's request reaches the user and is answered.
    await ask(agent, "f-1", "notification.show", {"text": "through the flood"})
    answer(stack, await card_for(stack, "notification.show"), "once")
    assert (await outcome(stack, "f-1"))["status"] == "completed"
    result = await wait_for(
        lambda: (hostile.report() or {}).get("results", {}).get("flood_requests"),
        120,
        "the hostile app's flood",
    )
    assert result["sent"] == FLOOD, result

    def counted() -> int:
        written = hostile.runtime_rows(
            "SELECT COUNT(*) FROM capability_requests WHERE app_scope = 'hostile'"
        )[0][0]
        summaries = [
            a["detail"] for a in stack.audit() if a["code"] == "capability.refusals_unrecorded"
        ]
        unwritten = sum(int(d.split(": ")[1].split(" ")[0]) for d in summaries)
        return int(written + unwritten)

    # Every request is accounted for: a row each for the first few, a count for the rest.
    await wait_for(lambda: counted() == FLOOD, 60, "every refused request accounted for")
    written = hostile.runtime_rows(
        "SELECT COUNT(*) FROM capability_requests WHERE app_scope = 'hostile'"
    )[0][0]
    assert written < FLOOD // 10, written
