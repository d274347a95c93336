"""The hostile app against the capability gateway, beside the keeper (both installed from
signed bundles through the CLI) waiting on the user's consent. The hostile app must not
answer the keeper's consent card or take it back, put a card of its own in the chat, ask in
the keeper's name, see or take back the user's grants, get a capability it did not declare,
or hand a "chosen" file to a request or to itself. An app that declares `file.open` cannot
ask past the runtime's size cap, and learns of the file the user chose its name and bytes,
never where it was. Every assertion reads an independent record: runtime.db (requests,
grants, audit), mailbox.db, the chat's own log."""

from __future__ import annotations

import json
from pathlib import Path

from actors.contracts import FILE_OPEN_MAX_BYTES
from lineup.ui_session import UiSession
from tests.capabilities.conftest import keeper  # noqa: F401 - the signed keeper bundle
from tests.capabilities.helpers import answer, ask, asked, card_for, cards, keeper_ready, outcome
from tests.capabilities.helpers import requests as gateway_requests
from tests.runtime.helpers import wait_for
from tests.tools.helpers import Agent

from .conftest import Hostile

FLOOD = 2_000  # refused requests, each under an id of its own


async def test_an_app_cannot_answer_anothers_consent_or_reach_the_grants(
    hostile: Hostile,
    keeper: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    stack = hostile.stack
    agent = await keeper_ready(stack, keeper)
    await hostile.install({"attacks": ["forge_consent"]})
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
    for attack in ("consent", "card", "grants", "revoke", "file chosen", "chosen artifact"):
        assert result[attack] == "refused:sender_not_allowed", (attack, result)
    # Its scope is the sender the supervisor stamped: a body naming another app is refused.
    assert result["as keeper"].startswith("refused:invalid_payload"), result
    # It may take back its own requests only: the keeper's id names none of its own, and
    # the keeper's key is no request id at all.
    assert result["withdraw"] == "accepted:null", result
    assert result["withdraw key"] == "refused:invalid_payload", result
    # What its own manifest does not declare, it does not get; that is audited as its own.
    for attack in ("undeclared", "file undeclared"):
        undeclared = json.loads(result[attack].removeprefix("accepted:"))
        assert undeclared == {"status": "permission_denied", "output": None}, attack
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
    assert hostile.runtime_rows("SELECT * FROM artifacts WHERE app_scope = 'hostile'") == []
    by_app = {(r["request_id"].split("/")[0], r["status"]) for r in gateway_requests(stack)}
    assert by_app == {("keeper", "permission_denied"), ("hostile", "permission_denied")}
    audited = [a for a in stack.audit() if a["source"] == "capability_gateway"]
    assert any(
        a["message_id"].startswith("hostile/") and "not declared" in a["detail"] for a in audited
    )
    await _a_file_asks_within_the_cap_and_gets_no_path(agent)


async def _a_file_asks_within_the_cap_and_gets_no_path(agent: Agent) -> None:
    """The keeper (which declares `file.open`) asks past the runtime's cap: refused before
    the user is asked. Within it, the user's file reaches it as bytes and a name made safe,
    whatever path the user's side named it by."""
    stack = agent.stack
    over = {"max_bytes": FILE_OPEN_MAX_BYTES + 1}
    assert await asked(agent, "h-2", "file.open", input=over, front=True) == {
        "status": "failed",
        "output": None,
        "code": "invalid_payload",
    }
    await ask(agent, "h-3", "file.open", {"accept": [".txt"]}, front=True)
    card = await card_for(stack, "file.open")
    chosen = {
        "request_id": card,
        "name": "/home/someone/secret plans/notes.txt",
        "media_type": "",
        "data": b"the plan",
    }
    UiSession(stack.data_dir, session_id="test").choose_file(chosen)
    opened = await outcome(stack, "h-3")
    assert opened["status"] == "completed", opened
    assert set(opened["output"]) == {"artifact_id", "name", "media_type", "size"}
    assert opened["output"]["name"] == "notes.txt"
    assert "someone" not in json.dumps(opened)


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
