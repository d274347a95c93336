"""The hostile app against the capability gateway, beside the keeper (both installed from
signed bundles through the CLI) waiting on the user's consent. The hostile app must not
answer the keeper's consent card or take it back, put a card of its own in the chat, ask in
the keeper's name, see or take back the user's grants, get a capability it did not declare, or
have anything but a recording of its own transcribed, even once the user allowed it. Every
assertion reads an independent record: runtime.db (requests, grants, audit), mailbox.db,
the chat's own log."""

from __future__ import annotations

import json
from pathlib import Path

from tests.capabilities.conftest import keeper  # noqa: F401 - the signed keeper bundle
from tests.capabilities.helpers import answer, ask, card_for, cards, keeper_ready, outcome
from tests.capabilities.helpers import requests as gateway_requests
from tests.runtime.helpers import wait_for

from .conftest import Hostile

FLOOD = 2_000  # refused requests, each under an id of its own


async def test_an_app_cannot_answer_anothers_consent_or_reach_the_grants(
    hostile: Hostile,
    keeper: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    stack = hostile.stack
    agent = await keeper_ready(stack, keeper)
    await hostile.install({"attacks": ["forge_consent", "misuse_speech"]})
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

    # Speech: the keeper's recording is not the hostile app's to transcribe, even with the
    # user's grant; nor is its own text, nor bytes it calls a WAV; speak it did not declare.
    await ask(agent, "h-speak", "speech.speak", {"text": "twenty five"})
    answer(stack, await card_for(stack, "speech.speak"), "once")
    spoken = await outcome(stack, "h-speak")
    hostile.order("misuse_speech", {"artifact_id": spoken["output"]["artifact"]["artifact_id"]})
    answer(stack, await card_for(stack, "speech.transcribe"), "always")
    speech = await wait_for(
        lambda: (hostile.report() or {}).get("results", {}).get("misuse_speech"),
        60,
        "the hostile app's speech attacks",
    )
    failed = {"status": "failed", "output": None}
    assert speech["another's"] == {**failed, "code": "artifact_not_found"}, speech
    assert speech["text"] == {**failed, "code": "invalid_payload"}, speech
    assert speech["fake wav"] == {**failed, "code": "invalid_payload"}, speech
    assert speech["as keeper"] == {**failed, "code": "invalid_payload"}, speech
    assert speech["speak"] == {"status": "permission_denied", "output": None}, speech
    assert speech["keep"] == "refused:sender_not_allowed", speech
    kept = hostile.runtime_rows("SELECT app_scope, media_type FROM artifacts ORDER BY rowid")
    assert kept == [("keeper", "audio/wav"), ("hostile", "audio/wav"), ("hostile", "text/plain")]


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
