"""The hostile app attacks through its channel: it must not speak as the agent, the user or
another actor (nor take back the agent's question), silence the user, cut the stream,
forge state or audit, or break any actor with what it sends. Every assertion reads an
independent record: the AppServer's own database, runtime.db, the chat timeline,
mailbox.db, restart counts and process sizes."""

from __future__ import annotations

from typing import Any

from apps.chat import history
from tests.runtime.helpers import CONVERSATION, Stack, texts, wait_for

from .app._attacks import (
    FAKE_AGENT_ID,
    FAKE_PROMPT_ID,
    FAKE_USER_ID,
    FAKE_WITHDRAW_ID,
    VICTIM_QUESTION,
)
from .conftest import Hostile

CORE = ("store", "router", "app_manager", "transport", "host", "app.chat")


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


async def test_the_hostile_app_speaks_for_nobody(hostile: Hostile) -> None:
    stack = hostile.stack
    await stack.start_appserver()
    runtime = await stack.start_runtime()
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "before")
    await agent.ask_confirm(CONVERSATION, "Keep it?", interaction_id=VICTIM_QUESTION)
    await wait_for(lambda: _open(stack) == [VICTIM_QUESTION], 30, "the agent's question")
    restarts = hostile.restarts()
    operations = hostile.registry_rows("SELECT count(*) FROM app_operations")[0][0]
    await hostile.install(
        {
            "attacks": [
                "speak_as_agent",
                "speak_as_user",
                "cut_stream",
                "forge_state",
                "bad_bodies",
                "large_bodies",
                "request_spam",
                "silence_user",
            ],
            "silence_user": {"seconds": 6},
        }
    )
    await hostile.launch()
    await wait_for(lambda: "silence_user" in str(hostile.report()), 60, "the attacks to begin")
    for n in range(10):  # typed while the app tries to read and settle them
        stack.user_says(f"typed {n}")
    report = await hostile.wait_report(120)
    results: dict[str, Any] = report["results"]

    _each_refused(results)

    # Nothing it said was stored as the agent's or the user's, nor shown.
    stored = hostile.runtime_rows(
        "SELECT id FROM messages WHERE id IN (?, ?, ?, ?)",
        (FAKE_AGENT_ID, FAKE_PROMPT_ID, FAKE_USER_ID, FAKE_WITHDRAW_ID),
    )
    assert stored == []
    timeline_ids = {item["id"] for item in stack.timeline()}
    assert not timeline_ids & {FAKE_AGENT_ID, FAKE_PROMPT_ID}
    assert _open(stack) == [VICTIM_QUESTION]  # the agent's question is still the user's
    assert hostile.appserver_rows(
        "SELECT count(*) FROM messages WHERE message_id = ?", (FAKE_USER_ID,)
    ) == [(0,)]
    # The user was not silenced: the AppServer got all ten, once each.
    sent = await wait_for(
        lambda: (
            hostile.appserver_rows(
                "SELECT body FROM messages WHERE sender_kind = 'user' ORDER BY seq"
            )
            if len(hostile.appserver_rows("SELECT seq FROM messages WHERE sender_kind = 'user'"))
            >= 10
            else None
        ),
        30,
        "the ten typed messages at the AppServer",
    )
    typed = [t for t in (_text(body) for (body,) in sent) if t.startswith("typed ")]
    assert typed == [f"typed {n}" for n in range(10)]
    # The stream was not cut: the agent's next message arrives, and the runtime is online.
    await agent.send_text(CONVERSATION, "after")
    await wait_for(lambda: "after" in texts(stack.timeline()), 30, "the message after")
    assert stack.lifecycle() == "online"
    # No audit row speaks for the app, and nothing it forged was written.
    assert not [row for row in stack.audit() if row["source"] == "app.hostile"]
    assert not [row for row in stack.audit() if row["code"] == "forged"]
    # Nothing it sent to an actor it may not reach was stored; no refused request left a row.
    assert hostile.mailbox_rows(
        "SELECT count(*) FROM messages WHERE sender = 'app.hostile'"
        " AND recipient NOT IN ('router', 'app_manager')"
    ) == [(0,)]
    assert (
        hostile.registry_rows("SELECT count(*) FROM app_operations")[0][0] == operations + 3
    )  # install, enable, launch
    # No core actor restarted, none grew.
    now = hostile.restarts()
    assert {name: now[name] for name in CORE} == {name: restarts[name] for name in CORE}
    for name in ("app_manager", "router", "store"):
        assert _rss_mib(runtime.pid_of(name) or 0) < 200, name
    refusals = runtime.actors()["app.hostile"]["refused"]
    silenced = sum(results["silence_user"]["outcomes"].values())
    assert refusals["sender_not_allowed"] >= silenced + 20
    assert refusals["too_large"] == 16 and refusals["too_deep"] == 1


def _open(stack: Stack) -> list[str]:
    """The questions open in the chat, by interaction id."""
    view = history(stack.data_dir, CONVERSATION)
    return [str(w["interaction_id"]) for w in view["pending_interactions"]]


def _text(body: str) -> str:
    import json

    return str(json.loads(body).get("payload", {}).get("text", ""))


def _each_refused(results: dict[str, Any]) -> None:
    """What the app got back for each attempt: refused at the door, with its code."""
    refused = "refused:sender_not_allowed"
    assert set(results["speak_as_agent"].values()) == {refused}
    speak_as_user = results["speak_as_user"]
    assert speak_as_user.pop("action").startswith("accepted")  # the router answers: below
    assert set(speak_as_user.values()) == {refused}
    assert set(results["cut_stream"].values()) == {refused}
    assert set(results["forge_state"].values()) == {refused}
    assert set(results["silence_user"]["outcomes"]) == {
        f"{type} {refused}" for type in ("store.outbox.pending", "store.outbox.settle")
    }
    bad = results["bad_bodies"]
    for target, outcome in bad.items():
        if target.startswith("wrong shape"):
            continue
        allowed = target in (
            "router router.action",
            "app_manager app_manager.request",
        )
        code = "invalid_payload" if allowed else "sender_not_allowed"
        assert outcome.startswith(f"refused:{code}"), (target, outcome)
    assert bad["wrong shape action"] == "refused:invalid_payload"
    assert bad["wrong shape request"] == "refused:invalid_payload"
    large = results["large_bodies"]
    assert all(v.startswith("refused:too_large") for k, v in large.items() if k.startswith("flat"))
    assert large["deep"].startswith("refused:too_deep")
    assert large["wide"].startswith("refused:too_large")
    assert results["request_spam"]["last"] == refused
