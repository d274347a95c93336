"""Session data is an app's own, and only data: the hostile app cannot read or write
another app's instances, its own closed or made-up ones, pass a quota, store what is not
JSON, overwrite a newer revision or forge the store's announcements; and what it stores,
dressed as a tool result, an envelope or a focus change, finishes no call, queues nothing
for the agent and moves nothing. Every assertion reads an independent record: what the
app got back, runtime.db and tool_router.db, the supervisor's refusal counts."""

from __future__ import annotations

from typing import Any

from actors.store import read_outbox, read_session_data
from tests.runtime.helpers import CONVERSATION, wait_for
from tests.tools.helpers import Agent, call_row, finals, new_revision, tools_of

from .app._session_attacks import FOREIGN, MINE
from .conftest import Hostile

CORE = ("store", "router", "app_manager", "transport", "host", "tool_router", "app.chat")
OWN = "hostile:conv-1"


def _expected_refusals() -> dict[str, str]:
    expected = {}
    for instance in FOREIGN:
        expected[f"get {instance}"] = expected[f"replace {instance}"] = "ownership_mismatch"
    for label, code in (
        ("made up", "instance_not_found"),
        ("climbing", "instance_not_found"),
        ("bare scope", "ownership_mismatch"),
    ):
        expected[f"get {label}"] = expected[f"replace {label}"] = code
    for label in (
        "app_scope in the body",
        "sender in the body",
        "revision in the body",
        "a list",
        "null",
        "a string",
        "revision a word",
        "revision true",
        "revision negative",
        "revision missing",
        "not a number",
        "bytes",
        "a number as key",
        "instance empty",
        "instance long",
    ):
        expected[label] = "invalid_payload"
    expected |= {
        "deep for the store": "too_deep",
        "deep for the door": "too_deep",
        "large for the store": "too_large",
        "large for the door": "too_large",
        "too many keys": "too_large",
        "stale": "revision_conflict",
        "sdk foreign": "ownership_mismatch",
        "announce to app.chat": "sender_not_allowed",
        "announce to app.hostile": "sender_not_allowed",
    }
    return expected


async def test_session_data_is_the_apps_own_and_only_data(hostile: Hostile) -> None:
    stack = hostile.stack
    await stack.start_appserver()
    runtime = await stack.start_runtime()
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    restarts = hostile.restarts()
    await hostile.install({"attacks": ["reach_session_data", "dress_session_data"]})
    await hostile.launch()

    def reached() -> dict[str, str] | None:
        result = (hostile.report() or {}).get("results", {}).get("reach_session_data")
        assert result is None or "outcomes" in result, result
        return dict(result["outcomes"]) if result else None

    outcomes = await wait_for(reached, 60, "the reach for session data")
    assert outcomes.pop("own get") == "accepted:{'data': None, 'revision': 0}"
    assert outcomes.pop("own replace") == "accepted:{'revision': 1}"
    assert outcomes.pop("last") == f"accepted:{ {'data': MINE, 'revision': 1} }"
    got = {label: outcome.split(":")[1] for label, outcome in outcomes.items()}
    assert all(outcome.startswith("refused:") for outcome in outcomes.values()), outcomes
    assert got == _expected_refusals()
    # Nothing was written for any other scope or instance; the refused never reached it.
    rows = hostile.runtime_rows("SELECT app_scope, instance_id, revision FROM app_session_data")
    assert rows == [("hostile", OWN, 1)]
    refused = runtime.actors()["app.hostile"]["refused"]
    assert refused["too_deep"] == 1 and refused["too_large"] == 1
    assert refused["sender_not_allowed"] >= 4  # the announcements, as calls and casts

    # Its data dressed as what only the runtime decides, while the agent's call on it is open.
    await new_revision(stack, first)
    await wait_for(lambda: "hostile.answer" in tools_of(stack), 30, "its tool in the inventory")
    agent = Agent(stack, client, "hostile")
    await client.submit(agent.invoke("call_held", "hostile.answer", {"how": "hold"}))
    await wait_for(
        lambda: (call_row(stack, "call_held") or {}).get("state") == "running",
        30,
        "the held call to run",
    )
    untouched = _runtime_facts(hostile)
    outbox = {item["key"] for item in read_outbox(stack.data_dir)}
    hostile.order("dress_session_data", {"victim": "call_held"})
    dressed = (await hostile.wait_report(60))["results"]["dress_session_data"]
    assert dressed["revisions"] == {
        "report": 2,
        "envelope": 3,
        "outbox": 4,
        "focus": 5,
        "instance": 6,
    }
    assert dressed["last"]["data"]["hook"] == "closing"
    # Only its data changed: the call is still open with no final for the agent, nothing
    # was queued, no focus, instance, operation or tool row moved.
    assert _runtime_facts(hostile) == untouched
    assert (call_row(stack, "call_held") or {})["state"] == "running"
    assert finals(stack, "call_held") == []
    assert {item["key"] for item in read_outbox(stack.data_dir)} == outbox
    assert [(r["instance_id"], r["revision"]) for r in read_session_data(stack.data_dir)] == [
        (OWN, 6)
    ]
    now = hostile.restarts()
    assert {name: now[name] for name in CORE} == {name: restarts[name] for name in CORE}


def _runtime_facts(hostile: Hostile) -> dict[str, list[tuple[Any, ...]]]:
    """What session data must never change: tool calls, instances, the focus stack and the
    other registry settings, operations, the outbox's items."""
    return {
        "tool_calls": hostile.tool_router_rows(
            "SELECT call_id, state, code, output FROM tool_calls ORDER BY call_id"
        ),
        "instances": hostile.registry_rows(
            "SELECT instance_id, state, mode FROM app_instances ORDER BY instance_id"
        ),
        "settings": hostile.registry_rows("SELECT name, value FROM app_settings ORDER BY name"),
        "operations": hostile.registry_rows("SELECT count(*) FROM app_operations"),
        "outbox": hostile.runtime_rows("SELECT count(*) FROM outbox"),
    }
