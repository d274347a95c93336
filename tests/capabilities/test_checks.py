"""The gateway's checks before anyone is asked, each refusal audited: a capability the app
did not declare, one this host does not serve, one that needs the foreground asked from the
background, one the policy denies (deny beats allow, a broken policy denies everything),
too many requests, and an app disabled while its request waited."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import trio

from tests.runtime.helpers import Stack, wait_for
from tests.tools.helpers import app, tools_of

from .helpers import (
    answer,
    ask,
    asked,
    audit_of,
    card_for,
    gateway_rows,
    keeper_ready,
    outcome,
    requests,
)


async def test_undeclared_unsupported_and_background_requests_are_refused(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, keeper)
    assert await asked(agent, "c-camera", "camera.capture") == {
        "status": "permission_denied",
        "output": None,
    }
    assert (await asked(agent, "c-mic", "microphone.record"))["status"] == "unsupported_on_host"
    # file.save needs the app in the foreground; keeper.ask runs it behind the chat.
    saved = await asked(agent, "c-save", "file.save", input={"name": "a", "data_base64": ""})
    assert saved["status"] == "permission_denied"
    done = requests(stack)
    assert [(r["capability"], r["status"]) for r in done] == [
        ("camera.capture", "permission_denied"),
        ("microphone.record", "unsupported_on_host"),
        ("file.save", "permission_denied"),
    ]
    audits = [await audit_of(stack, r["request_id"]) for r in done]
    assert audits == [
        ["capability.permission_denied"],
        ["capability.unsupported_on_host"],
        ["capability.permission_denied"],
    ]
    details = [row["detail"] for row in stack.audit() if row["source"] == "capability_gateway"]
    assert "not declared" in details[0] and "foreground" in details[2]
    # Nobody was asked: no card, and no file.
    assert not (stack.data_dir / "downloads").exists() or not os.listdir(
        stack.data_dir / "downloads"
    )


async def test_policy_denies_and_a_broken_policy_denies_everything(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, keeper)
    policy = stack.data_dir / "tool_policy.json"
    # One file for tools and capabilities; deny beats allow.
    policy.write_text(
        json.dumps(
            {
                "allow": ["keeper/*"],
                "capabilities": {"allow": ["keeper/*"], "deny": ["*/notification.show"]},
            }
        )
    )
    denied = await asked(agent, "p-1", "notification.show", input={"text": "hi"})
    assert denied == {"status": "policy_denied", "output": None}
    # The tool router reads the same file and still offers the keeper's tools.
    assert "keeper.ask" in tools_of(stack)
    policy.write_text(json.dumps({"capabilities": {"deny": "not a list"}}))
    broken = await asked(agent, "p-2", "notification.show", input={"text": "hi"})
    assert broken["status"] == "policy_denied"
    # A policy that changes while the user decides holds against the user's yes.
    policy.unlink()
    await ask(agent, "p-3", "notification.show", {"text": "hi"})
    card = await card_for(stack, "notification.show")
    policy.write_text(json.dumps({"capabilities": {"deny": ["keeper/*"]}}))
    answer(stack, card, "always")
    assert (await outcome(stack, "p-3"))["status"] == "policy_denied"
    statuses = [(r["status"], await audit_of(stack, r["request_id"])) for r in requests(stack)]
    assert statuses == [
        ("policy_denied", ["capability.policy_denied"]),
        ("policy_denied", ["capability.policy_denied"]),
        ("policy_denied", ["capability.consent_asked", "capability.policy_denied"]),
    ]
    details = [row["detail"] for row in stack.audit() if row["source"] == "capability_gateway"]
    assert "deny[1]" in details[0] and "cannot be used" in details[1]
    assert not (stack.data_dir / "notifications.jsonl").exists()
    assert gateway_rows(stack, "SELECT * FROM capability_grants") == []


async def test_a_flood_is_rate_limited_before_the_user_is_asked(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, keeper, rate_limit={"burst": 2, "per_minute": 0.01})
    shown: set[str] = set()
    for n in (1, 2):  # two requests reach the user, who does not answer them
        await ask(agent, f"r-{n}", "notification.show", input={"text": "x"}, timeout_s=4)
        shown.add(await card_for(stack, "notification.show", shown))
    limited = await asked(agent, "r-3", "notification.show", input={"text": "x"})
    assert limited == {"status": "failed", "output": None, "code": "rate_limited"}
    for n in (1, 2):  # and past their deadline they expire
        assert (await outcome(stack, f"r-{n}"))["status"] == "expired"
    by_status = sorted((r["status"], r["code"]) for r in requests(stack))
    assert by_status == [("expired", None), ("expired", None), ("failed", "rate_limited")]
    for row in requests(stack):
        codes = await audit_of(stack, row["request_id"])
        if row["status"] == "expired":
            assert codes == ["capability.consent_asked", "capability.expired"]
        else:
            assert codes == ["capability.rate_limited"]


async def test_a_request_that_waited_while_its_app_was_disabled_is_denied(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, keeper)
    # A first request, answered, so that the keeper's process is up.
    await ask(agent, "d-0", "notification.show", input={"text": "first"})
    answer(stack, await card_for(stack, "notification.show"), "deny")
    assert (await outcome(stack, "d-0"))["status"] == "permission_denied"
    assert stack.runtime is not None
    gateway = int(stack.runtime.actors()["capability_gateway"]["pid"])
    os.kill(gateway, signal.SIGSTOP)  # the next request waits for it, stored
    try:
        await ask(agent, "d-1", "notification.show", input={"text": "x"})
        await wait_for(lambda: _stored_requests(stack) == 1, 30, "the request stored")
        await trio.to_thread.run_sync(app, stack, "disable", "keeper")
    finally:
        os.kill(gateway, signal.SIGCONT)
    done = await wait_for(
        lambda: [r for r in requests(stack) if r["state"] == "finished"][1:],
        30,
        "the gateway's decision on the second request",
    )
    assert done[0]["status"] == "permission_denied"
    assert await audit_of(stack, done[0]["request_id"]) == ["capability.permission_denied"]
    details = [row["detail"] for row in stack.audit() if row["source"] == "capability_gateway"]
    assert details[-1].endswith("the app is disabled")


def _stored_requests(stack: Stack) -> int:
    """Requests for the gateway in its mailbox, not yet handled."""
    path = stack.data_dir / "mailbox.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        found = db.execute(
            "SELECT COUNT(*) FROM messages WHERE recipient = 'capability_gateway'"
            " AND type = 'capability_gateway.request' AND state IN (0, 1)"
        ).fetchone()
    return int(found[0])
