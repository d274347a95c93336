"""The hostile app against the tool machinery, beside the toolbox app (both installed from
signed bundles through the CLI) and an agent that makes real calls. It must not end, steer
or hide another app's call, end its own calls otherwise than the runtime allows, send what
only the runtime's own actors may send, or break or clog the tool router with its reports.
Every assertion reads an independent record: runtime.db (calls, outbox, audit), the
AppServer's store (what the agent is given), mailbox.db, `lineup debug actors`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import msgpack
import trio

from tests.app_manager.conftest import lineup
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.conftest import toolbox  # noqa: F401 - the signed toolbox bundle
from tests.tools.helpers import (
    Agent,
    call_row,
    final_of,
    finals,
    install_toolbox,
    stream_finals,
    tools_of,
)

from .app._attacks import STOLEN, bad_report_bodies
from .conftest import Hostile

CORE = ("store", "router", "app_manager", "transport", "host", "tool_router", "app.chat")
FOREIGN_FLOOD = 2_000  # reports on the toolbox's call: each one audited
GHOST_FLOOD = 10_000  # reports on call ids that never existed
FORBIDDEN = (
    "app.tool.invoke",
    "app.tool.cancel",
    "tool_router.inbound",
    "tool_router.apps",
    "transport.submit",
)


async def _ready(hostile: Hostile, box: tuple[Path, Path], orders: dict[str, Any]) -> Agent:
    """The runtime with the toolbox and the hostile app installed (this one with its
    orders), both apps' tools in the agent's inventory; the agent's side of calls."""
    stack = hostile.stack
    client = await hostile.start_conversation()
    await trio.to_thread.run_sync(install_toolbox, stack, box)
    await hostile.install(orders)
    await wait_for(
        lambda: {"box.sleep", "hostile.answer"} <= set(tools_of(stack)),
        30,
        "both apps' tools in the inventory",
    )
    return Agent(stack, client, "toolbox")


def _result(hostile: Hostile, attack: str) -> dict[str, Any] | None:
    result = (hostile.report() or {}).get("results", {}).get(attack)
    return dict(result) if result is not None else None


async def _running(stack: Stack, call_id: str) -> None:
    await wait_for(
        lambda: (call_row(stack, call_id) or {}).get("state") == "running",
        30,
        f"{call_id} running",
    )


async def _cancel(agent: Agent, call_id: str) -> dict[str, Any]:
    cancel = agent.client.envelope(
        "lineup.tool.cancel",
        CONVERSATION,
        {"reason": "the test is done with it"},
        app_scope=agent.app_scope,
        target_kind="runtime",
        call_id=call_id,
    )
    await agent.client.submit(cancel)
    return await final_of(agent.stack, call_id)


async def _stored_progress(stack: Stack, call_id: str, at_least: int) -> list[dict[str, Any]]:
    """The call's progress in the outbox once it holds `at_least` (the tool router stores
    it without waiting)."""
    return await wait_for(
        lambda: (found := _progress(stack, call_id)) and len(found) >= at_least and found,
        30,
        f"{at_least} progress of {call_id}",
    )


def _progress(stack: Stack, call_id: str) -> list[dict[str, Any]]:
    """The progress the agent is sent about a call, in outbox order."""
    return [
        env["payload"]
        for env in stack.given()
        if env["type"] == "lineup.tool.progress" and env["correlation"]["call_id"] == call_id
    ]


def _shown_progress(hostile: Hostile, call_id: str) -> list[dict[str, Any]]:
    """The progress the chat was told about a call (its timeline's tool item), one step a
    message or several in one."""
    rows = hostile.mailbox_rows(
        "SELECT type, frame FROM messages WHERE sender = 'tool_router' AND recipient = 'app.chat'"
        " AND type IN ('app.tool.event', 'app.tool.events') ORDER BY seq"
    )
    events = []
    for type_, frame in rows:
        body = msgpack.unpackb(msgpack.unpackb(frame)["body"])
        events += [s["step"] for s in body["steps"]] if type_ == "app.tool.events" else [body]
    return [e for e in events if e["call_id"] == call_id and e["state"] == "progress"]


def _finals_in_stream(stack: Stack, calls: list[str]) -> dict[str, list[str]] | None:
    """The AppServer's stream once each of `calls` has its final there."""
    stream = stream_finals(stack)
    return stream if all(call in stream for call in calls) else None


async def _debug_actors(hostile: Hostile) -> dict[str, dict[str, Any]]:
    """`lineup debug actors --json --stats`, by name."""
    code, out, err = await trio.to_thread.run_sync(
        lambda: lineup("debug", "actors", "--json", "--stats", "--data-dir", hostile.data_dir)
    )
    assert code == 0, err
    return {a["name"]: a for a in json.loads(out)}


async def _backlog_while(hostile: Hostile, attack: str, timeout: float) -> int:
    """Until the hostile app reports `attack` done: the most messages seen waiting for the
    tool router (stored, not yet handled)."""
    runtime = hostile.stack.runtime
    assert runtime is not None
    deadline = time.monotonic() + timeout
    most = 0
    while _result(hostile, attack) is None:
        assert time.monotonic() < deadline, f"{attack} did not end within {timeout} s"
        record = runtime.actors()["tool_router"]
        most = max(most, record["pending"] + record["inflight"])
        await trio.sleep(0.02)
    return most


def _within_credits(hostile: Hostile, backlog: int) -> bool:
    """Whether `backlog` is within what the app's credits and one burst of its pace allow
    (the runtime's own configuration)."""
    assert hostile.stack.runtime is not None
    limits = hostile.stack.runtime.config["app_limits"]
    return backlog <= int(limits["outstanding"]) + int(limits["burst"])


async def _drained(hostile: Hostile) -> None:
    runtime = hostile.stack.runtime
    assert runtime is not None

    def drained() -> bool:
        record = runtime.actors()["tool_router"]
        return bool(record["pending"] == 0 and record["inflight"] == 0)

    await wait_for(drained, 30, "the tool router's mailbox drained")


async def test_another_apps_call_is_not_its_to_end_or_hide(
    hostile: Hostile,
    toolbox: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    stack = hostile.stack
    agent = await _ready(hostile, toolbox, {"attacks": ["steal_call", "squat"]})
    await hostile.launch()
    restarts = hostile.restarts()
    mine = Agent(stack, agent.client, "hostile")
    # A toolbox call that takes a minute, and a call of the hostile app's own it keeps open.
    await agent.client.submit(agent.invoke("call_victim", "box.sleep"))
    await _running(stack, "call_victim")
    await mine.client.submit(mine.invoke("call_hold", "hostile.answer", {"how": "hold"}))
    await _running(stack, "call_hold")

    # It learns the toolbox call's id and reports on it: a result, an error, progress; then
    # a flood of the same.
    hostile.order("steal_call", {"victim": "call_victim", "flood": FOREIGN_FLOOD})
    backlog = await _backlog_while(hostile, "steal_call", 60)
    stolen = _result(hostile, "steal_call")
    assert stolen is not None
    replies = stolen["replies"]
    # The SDK refuses at once. The tool router answers a report on a foreign call exactly
    # as one on a call that never existed: nothing tells the app the call is there.
    assert {replies[f"sdk {k}"] for k in ("complete", "fail", "progress")} == {
        "refused:ownership_mismatch"
    }, replies
    for kind in ("result", "error", "progress"):
        assert replies[f"victim {kind}"] == replies[f"ghost {kind}"] == "accepted:null", replies
    assert stolen["flood"]["last"] == "accepted:null", stolen["flood"]
    # Each report is audited by the tool router, naming the app; none reached the call.
    audited = [
        row
        for row in stack.audit()
        if row["code"] == "ownership_mismatch" and "call_victim" in row["detail"]
    ]
    # At most one row per sender every ten seconds, with the count since the last: the
    # flood costs the tool router no store write per report.
    assert stolen["report_ids"][0] in {r["message_id"] for r in audited}
    assert 1 <= len(audited) <= 5, audited
    assert all(
        r["detail"].startswith("app.hostile reported on call_victim of toolbox (") for r in audited
    )
    assert {r["source"] for r in audited} == {"tool_router"}
    victim = call_row(stack, "call_victim")
    assert victim is not None and victim["state"] == "running"
    assert [h["event"] for h in victim["history"]][-1] == "running"
    assert _progress(stack, "call_victim") == []
    assert _shown_progress(hostile, "call_victim") == []
    # The flood waited on its sending credits and the tool router took it all.
    assert _within_credits(hostile, backlog), backlog
    await _drained(hostile)
    print(f"{FOREIGN_FLOOD} foreign reports: at most {backlog} waiting for the tool router")

    # It squats the message ids the toolbox's reports on a call will have (derived from
    # the call id) with progress on its own call: the toolbox's progress reaches the agent
    # and the chat all the same.
    hostile.order("squat", {"own_call": "call_hold", "victim": "call_slow"})
    squatted = (await hostile.wait_report(30))["results"]["squat"]
    assert squatted["last"] == "accepted:null", squatted
    assert len(await _stored_progress(stack, "call_hold", len(squatted["ids"]) + 1)) == (
        len(squatted["ids"]) + 1
    )
    row = await agent.call("call_slow", "box.slow")
    assert row["state"] == "succeeded"
    assert [p.get("percent") for p in _progress(stack, "call_slow")] == [0, 50, 100]
    assert [p.get("percent") for p in _shown_progress(hostile, "call_slow")] == [0, 50, 100]

    # The toolbox call ends as the agent wants, not as the hostile app said.
    row = await _cancel(agent, "call_victim")
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    assert [e["payload"]["code"] for e in finals(stack, "call_victim")] == ["cancelled_by_user"]
    row = await _cancel(mine, "call_hold")
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    stream = await wait_for(
        lambda: _finals_in_stream(stack, ["call_victim", "call_slow", "call_hold"]),
        30,
        "the finals in the AppServer's stream",
    )
    assert stream == {
        "call_victim": ["lineup.tool.error"],
        "call_slow": ["lineup.tool.result"],
        "call_hold": ["lineup.tool.error"],
    }
    assert STOLEN not in json.dumps(stack.given())
    assert not [r for r in stack.audit() if r["source"] == "app.hostile"]
    now = hostile.restarts()
    assert {name: now[name] for name in CORE} == {name: restarts[name] for name in CORE}
    assert now["app.toolbox"] == now["app.hostile"] == 0


async def test_its_own_calls_end_only_as_the_runtime_allows(
    hostile: Hostile,
    toolbox: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    stack = hostile.stack
    agent = await _ready(hostile, toolbox, {"attacks": []})
    mine = Agent(stack, agent.client, "hostile")
    # Each answer is sent by hand, past the SDK; the first call launches the app.
    hows = ["stale_inventory_revision", "tool_not_visible", "app_disabled", "bad_output"]
    for how in hows:
        row = await mine.call(f"call_{how}", "hostile.answer", arguments={"how": how})
        assert (row["state"], row["code"]) == ("failed", "handler_failed"), row
        assert not row["output"], row
        errors = finals(stack, f"call_{how}")
        # One final: the valid result that followed the first answer did not count.
        assert [e["payload"]["code"] for e in errors] == ["handler_failed"], errors
        assert errors[0]["sender"] == {"kind": "runtime", "id": "runtime:tool_router"}
        assert STOLEN not in json.dumps(errors)  # what its answer held is never relayed
    # The output its schema refused: audited with the reason, never shown to the agent.
    bad = await stack.audit_of((call_row(stack, "call_bad_output") or {})["envelope_id"])
    assert bad["code"] == "handler_failed" and bad["detail"].startswith("call_bad_output: ")
    stream = await wait_for(
        lambda: _finals_in_stream(stack, [f"call_{how}" for how in hows]),
        30,
        "the finals in the AppServer's stream",
    )
    assert {call: stream[call] for call in stream if call != "call_echo"} == {
        f"call_{how}": ["lineup.tool.error"] for how in hows
    }
    # The toolbox's calls still run as its own tools say.
    row = await agent.call("call_echo", "box.echo", arguments={"value": "still here"})
    assert row["output"] == {"echo": "still here"}


async def test_floods_and_forbidden_messages_leave_the_tool_router_well(
    hostile: Hostile,
    toolbox: tuple[Path, Path],  # noqa: F811 - the fixture imported above
) -> None:
    stack = hostile.stack
    agent = await _ready(
        hostile,
        toolbox,
        {
            "attacks": ["forbidden_tool_messages", "bad_reports", "flood_reports"],
            "forbidden_tool_messages": {"casts": 50},
            "flood_reports": {"count": GHOST_FLOOD},
        },
    )
    restarts = hostile.restarts()
    audit_rows = len(stack.audit())
    before = (await _debug_actors(hostile))["tool_router"]["statistics"]
    await hostile.launch()
    backlog = await _backlog_while(hostile, "flood_reports", 120)
    results = (await hostile.wait_report(30))["results"]

    # What only the runtime's own actors may send: refused at the supervisor's door,
    # never stored, each counted.
    forbidden = results["forbidden_tool_messages"]
    assert set(forbidden["outcomes"].values()) == {"refused:sender_not_allowed"}, forbidden
    marks = ", ".join("?" * len(FORBIDDEN))
    assert hostile.mailbox_rows(
        f"SELECT count(*) FROM messages WHERE sender = 'app.hostile' AND type IN ({marks})",
        FORBIDDEN,
    ) == [(0,)]
    assert call_row(stack, "call_forged") is None
    assert "call_forged" not in json.dumps(stack.given())  # no forged final reached the agent

    # Report bodies of the wrong types, with extra fields, oversize: refused at a door.
    bad = results["bad_reports"]["outcomes"]
    for label in bad_report_bodies():
        assert bad[label].startswith("refused:invalid_payload"), (label, bad[label])
    assert bad["not msgpack"].startswith("refused:invalid_payload"), bad
    assert bad["output too large"].startswith("refused:too_large"), bad
    assert bad["output too wide"].startswith("refused:too_large"), bad
    assert bad["well formed"] == "accepted:null", bad

    # The flood of reports on calls that never existed, handled to the last.
    flood = results["flood_reports"]
    assert flood["last"] == "accepted:null", flood
    await _drained(hostile)
    first_ms, last_ms, stored = hostile.mailbox_rows(
        "SELECT min(created_ms), max(created_ms), count(*) FROM messages"
        " WHERE sender = 'app.hostile' AND type = 'tool_router.report'"
    )[0]
    assert stored >= GHOST_FLOOD
    # Stored at its pace, no faster; no more waiting than its credits and a burst allow.
    # A row's time is when the mailbox wrote it, which trails the pace by the writer's lag,
    # longest for the first burst: half a second allows for it (unpaced, the whole flood
    # is stored in well under the time its pace takes).
    assert stack.runtime is not None
    limits = stack.runtime.config["app_limits"]
    stored_over = (last_ms - first_ms) / 1000
    assert stored_over >= (stored - limits["burst"]) / limits["rate"] - 0.5, stored_over
    assert _within_credits(hostile, backlog), backlog
    print(f"{stored} reports stored over {stored_over:.2f} s, at most {backlog} waiting")

    # `lineup debug actors` counts every refusal, at the supervisor's door and the tool
    # router's; no handler of the tool router failed, none of its counts moved.
    # A body that is no map at all is the supervisor's to refuse; the rest, the router's.
    not_maps = sum(1 for body in bad_report_bodies().values() if not isinstance(body, dict))
    actors = await _debug_actors(hostile)
    assert actors["app.hostile"]["refused"] == {
        "sender_not_allowed": forbidden["sent"],
        "invalid_payload": 1 + 2 * not_maps,
        "too_large": 2,
    }
    after = actors["tool_router"]["statistics"]
    refused_bodies = after["extra"]["refused_bodies"] - before["extra"]["refused_bodies"]
    assert refused_bodies == 2 * (len(bad_report_bodies()) - not_maps), after
    assert after["failed"] == before["failed"] == 0
    assert {k: after["extra"][k] for k in ("accepted", "refused", "succeeded", "failed")} == {
        k: before["extra"][k] for k in ("accepted", "refused", "succeeded", "failed")
    }

    # Nothing reached the agent or the audit; nothing restarted; the agent is served.
    assert not [c for c in stream_finals(stack) if c.startswith(("call_ghost", "call_nobody"))]
    outbox = json.dumps(stack.given())
    assert "call_ghost" not in outbox and "call_nobody" not in outbox and STOLEN not in outbox
    assert len(stack.audit()) == audit_rows
    now = hostile.restarts()
    assert {name: now[name] for name in CORE} == {name: restarts[name] for name in CORE}
    row = await agent.call("call_echo", "box.echo", arguments={"value": "after the flood"})
    assert row["output"] == {"echo": "after the flood"}
