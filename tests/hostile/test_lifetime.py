"""The hostile app against a call's bounded life (installed from its signed bundle through
the CLI, its calls made by a real agent): a handler that never answers does not keep the
call open past its tool's declared `timeout_ms`. The call ends `operation_expired` once,
its handler is told to stop, and what the app says about the call afterwards is ignored,
counted and audited; a kill of the tool router or of the app while the call is open leaves
it exactly one final too. Every assertion reads an independent record: runtime.db (the call,
the outbox, the audit) and the app's own report."""

from __future__ import annotations

import time

from tests.installed.helpers import killed_and_back
from tests.runtime.helpers import wait_for
from tests.tools.helpers import call_row, final_of, finals

from .app._late_attacks import SILENT_TIMEOUT_MS
from .conftest import Hostile

CORE = ("store", "router", "app_manager", "transport", "host", "app.chat")
# What the tool router may take beyond the declared timeout to notice it passed and say so.
NOTICED_WITHIN_S = 2.0


def _final_codes(hostile: Hostile, call_id: str) -> list[str]:
    return [str(f["payload"].get("code")) for f in finals(hostile.stack, call_id)]


async def _running(hostile: Hostile, call_id: str) -> None:
    await wait_for(
        lambda: (call_row(hostile.stack, call_id) or {}).get("state") == "running",
        30,
        f"{call_id} running",
    )


async def test_a_handler_that_never_answers_has_a_bounded_life(hostile: Hostile) -> None:
    stack = hostile.stack
    agent = await hostile.started({"attacks": ["answer_late"]}, "hostile.silent")
    client = agent.client
    await hostile.launch()
    restarts = hostile.restarts()

    # Its handler never answers: the call ends at its declared timeout, once, audited, and
    # the handler hears that the call ended.
    submitted = time.monotonic()
    await client.submit(agent.invoke("call_silent", "hostile.silent"))
    row = await final_of(stack, "call_silent")
    took = time.monotonic() - submitted
    assert (row["state"], row["code"]) == ("failed", "operation_expired"), row
    assert row["detail"] == f"no outcome within {SILENT_TIMEOUT_MS} ms", row
    assert took < SILENT_TIMEOUT_MS / 1000 + NOTICED_WITHIN_S, f"ended after {took:.2f} s"
    assert _final_codes(hostile, "call_silent") == ["operation_expired"]
    assert (await stack.audit_of(row["envelope_id"]))["code"] == "operation_expired"
    await wait_for(
        lambda: "call_silent" in (hostile.report() or {}).get("silenced", []),
        30,
        "the handler told the call ended",
    )

    # It answers anyway, every way a report can: each is ignored, the call keeps its one
    # final, and the tool router audits that it refused a late report.
    hostile.order("answer_late", {"call": "call_silent"})
    replies = (await hostile.wait_report(30))["results"]["answer_late"]["replies"]
    assert set(replies.values()) == {"accepted:null"}, replies
    assert call_row(stack, "call_silent") == row
    assert _final_codes(hostile, "call_silent") == ["operation_expired"]
    late = await wait_for(
        lambda: [a for a in stack.audit() if a["code"] == "tool_report.late"],
        30,
        "the late report audited",
    )
    assert late[0]["source"] == "tool_router", late
    assert late[0]["detail"].startswith(
        "app.hostile reported on call_silent, which had ended operation_expired"
    ), late

    # Open when the tool router is killed: the restarted router ends it, once.
    await client.submit(agent.invoke("call_router_killed", "hostile.silent"))
    await _running(hostile, "call_router_killed")
    await killed_and_back(stack, "tool_router")
    row = await final_of(stack, "call_router_killed")
    assert (row["state"], row["code"]) == ("failed", "operation_expired"), row
    assert _final_codes(hostile, "call_router_killed") == ["operation_expired"]

    # Open when its app is killed: one final, whichever comes first (the app's restart
    # says it stopped while running it, or the timeout).
    await client.submit(agent.invoke("call_app_killed", "hostile.silent"))
    await _running(hostile, "call_app_killed")
    await killed_and_back(stack, "app.hostile")
    row = await final_of(stack, "call_app_killed")
    assert row["code"] in ("operation_expired", "handler_failed"), row
    assert len(_final_codes(hostile, "call_app_killed")) == 1
    now = hostile.restarts()
    assert {n: now[n] for n in CORE} == {n: restarts[n] for n in CORE}
    assert now["tool_router"] == restarts["tool_router"] + 1
