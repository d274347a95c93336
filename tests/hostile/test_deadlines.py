"""The hostile app against deadline operations (installed from its signed bundle through the
CLI, its calls made by a real agent): once the runtime holds one of its calls until a
deadline, it cannot end it, move its deadline, stop it as the user would, or interrupt or
read operations through a call that is not a running one of its own. Every refusal reads an
independent record: runtime.db (the call, its operation, the outbox, the audit) and the
AppServer's store."""

from __future__ import annotations

import json
from typing import Any

from actors.tool_router import read_tool_deadlines
from tests.runtime.helpers import wait_for
from tests.tools.helpers import call_row, final_of, finals

from .app._deadline_attacks import HELD_MS
from .conftest import Hostile

CORE = ("store", "router", "app_manager", "transport", "host", "tool_router", "app.chat")


async def test_a_call_the_runtime_holds_is_not_the_apps_to_end(hostile: Hostile) -> None:
    stack = hostile.stack
    agent = await hostile.started({"attacks": ["seize_deadline"]}, "hostile.hold")
    client = agent.client

    # Its tool hands the call to the runtime: the runtime starts the deadline and says so.
    await client.submit(agent.invoke("call_seized", "hostile.hold"))

    def held() -> dict[str, Any] | None:
        operation = read_tool_deadlines(stack.data_dir).get("call_seized")
        return operation if operation and operation["state"] == "running" else None

    operation = await wait_for(held, 30, "the runtime holding the call")
    restarts = hostile.restarts()
    hostile.order("seize_deadline", {"own_call": "call_seized"})
    replies = (await hostile.wait_report(60))["results"]["seize_deadline"]["replies"]

    # Past the SDK: every way to end the call or move its deadline is refused, by code.
    for label in ("result", "error", "progress", "sooner deadline"):
        assert replies[label] == "refused:ownership_mismatch", (label, replies)
    assert replies["same deadline"] == "accepted:null", replies  # its own report, again
    # Through the SDK: its complete is refused by the runtime (sent, and audited below);
    # after it, the SDK holds the call for ended and refuses the fail itself.
    assert replies["sdk complete"] == "sent", replies
    assert replies["sdk fail"] == "refused:ownership_mismatch", replies
    # Stopping it as the user would (only the chat app may), or telling another app how an
    # operation went (only the tool router may): refused at the door.
    assert replies["user stop"] == "refused:sender_not_allowed", replies
    assert replies["tell chat"] == "refused:sender_not_allowed", replies
    assert replies["tell chat steps"] == "refused:sender_not_allowed", replies
    # The call it names is not a running one of its own: the runtime's, or none at all.
    for label in ("interrupt own", "list own", "interrupt ghost"):
        assert replies[label] == "refused:ownership_mismatch", (label, replies)
    assert replies["last"] == "accepted:null", replies

    # The call is still the runtime's, with the deadline it was given.
    row = call_row(stack, "call_seized") or {}
    assert row["state"] == "deadline", row
    now = read_tool_deadlines(stack.data_dir)["call_seized"]
    assert (now["state"], now["duration_ms"], now["ends_ms"]) == (
        "running", HELD_MS, operation["ends_ms"],
    )  # fmt: skip
    assert finals(stack, "call_seized") == []
    envelopes = json.dumps(stack.given())
    assert '"state": "finished"' not in envelopes and '"percent": 100' not in envelopes
    # Audited by the tool router, naming the app and how many it refused since.
    audited = [
        a
        for a in stack.audit()
        if a["code"] == "ownership_mismatch"
        and "call_seized, which the runtime owns" in a["detail"]
    ]
    assert audited and all(a["source"] == "tool_router" for a in audited), audited
    assert audited[0]["detail"].startswith("app.hostile reported on call_seized, which the")
    assert not [a for a in stack.audit() if a["source"] == "app.hostile"]

    # It ends as the agent wants: once.
    await client.submit(agent.cancel("call_seized"))
    row = await final_of(stack, "call_seized")
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    assert row["detail"].startswith("interrupted by the agent; it was to end at ")
    assert [f["payload"]["code"] for f in finals(stack, "call_seized")] == ["cancelled_by_user"]
    now_restarts = hostile.restarts()
    assert {n: now_restarts[n] for n in CORE} == {n: restarts[n] for n in CORE}
