"""The user decides: a consent card in the chat with the app and its purpose, answered once,
for this session, always or deny, or dismissed; a grant the user gave lasts as its scope
says (always across a runtime restart), `lineup capabilities` lists it and takes it back,
and every step is audited."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from actors.capability_gateway import read_notifications
from tests.app_manager.conftest import lineup
from tests.runtime.helpers import CONVERSATION, Stack

from .helpers import answer, ask, asked, audit_of, card_for, cards, keeper_ready, outcome, requests

NOTE = {"title": "Keeper", "text": "tea is ready"}


def _grants(stack: Stack) -> list[dict[str, object]]:
    code, out, err = lineup("capabilities", "list", "--json", "--data-dir", stack.data_dir)
    assert code == 0, err
    return list(json.loads(out))


async def test_deny_once_dismiss_always_across_a_restart_and_revoke(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, keeper)

    await ask(agent, "n-1", "notification.show", NOTE, purpose="to say the tea is ready")
    card = await card_for(stack, "notification.show")
    shown = next(c for c in cards(stack) if c["interaction_id"] == card)
    assert shown["prompt"] == "keeper asks to show you notifications: to say the tea is ready"
    assert [o["id"] for o in shown["options"]] == ["once", "session", "always", "deny"]
    answer(stack, card, "deny")
    assert await outcome(stack, "n-1") == {"status": "permission_denied", "output": None}

    await ask(agent, "n-2", "notification.show", NOTE)
    answer(stack, await card_for(stack, "notification.show", {card}), "once")
    assert await outcome(stack, "n-2") == {"status": "completed", "output": {"shown": True}}
    shown_notes, _ = read_notifications(stack.data_dir)
    assert [(n["app_scope"], n["text"]) for n in shown_notes] == [("keeper", "tea is ready")]

    # Once is once: the next request asks again, and the user dismisses it.
    await ask(agent, "n-3", "notification.show", NOTE)
    third = await card_for(stack, "notification.show", {card, *_known(stack)})
    answer(stack, third, "dismiss")
    assert (await outcome(stack, "n-3"))["status"] == "cancelled_by_user"
    assert not cards(stack)  # every card closed once decided

    await ask(agent, "n-4", "notification.show", NOTE)
    answer(stack, await card_for(stack, "notification.show", _known(stack)), "always")
    assert (await outcome(stack, "n-4"))["status"] == "completed"
    assert (await asked(agent, "n-5", "notification.show", input=NOTE))["status"] == "completed"
    grants = _grants(stack)
    assert [(g["app_scope"], g["capability"], g["scope"]) for g in grants] == [
        ("keeper", "notification.show", "always")
    ]
    code, out, err = lineup("capabilities", "list", "--data-dir", stack.data_dir)
    assert code == 0 and "notification.show" in out and "always" in out, err

    # The grant is kept across a restart of the whole runtime: no card, completed.
    assert stack.runtime is not None
    stack.runtime.stop()
    await stack.start_runtime()
    assert (await asked(agent, "n-6", "notification.show", input=NOTE))["status"] == "completed"

    code, out, err = await trio.to_thread.run_sync(
        lambda: lineup(
            "capabilities", "revoke", "keeper", "notification.show", "--data-dir", stack.data_dir
        )
    )
    assert code == 0 and "keeper will be asked again" in out, err
    assert _grants(stack) == []
    code, _, err = await trio.to_thread.run_sync(
        lambda: lineup(
            "capabilities", "revoke", "keeper", "notification.show", "--data-dir", stack.data_dir
        )
    )
    assert code == 1 and "has no grant for notification.show" in err
    # Revoked: the user is asked again, does not answer, and the request expires.
    await ask(agent, "n-7", "notification.show", NOTE, timeout_s=1)
    await card_for(stack, "notification.show", _known(stack))
    assert (await outcome(stack, "n-7"))["status"] == "expired"

    statuses = [r["status"] for r in requests(stack)]
    assert statuses == [
        "permission_denied",
        "completed",
        "cancelled_by_user",
        "completed",
        "completed",
        "completed",
        "expired",
    ]
    assert [await audit_of(stack, r["request_id"]) for r in requests(stack)] == [
        ["capability.consent_asked", "capability.consent_deny"],
        ["capability.consent_asked", "capability.started", "capability.completed"],
        ["capability.consent_asked", "capability.consent_dismiss"],
        ["capability.consent_asked", "capability.started", "capability.completed"],
        ["capability.started", "capability.completed"],
        ["capability.started", "capability.completed"],
        ["capability.consent_asked", "capability.expired"],
    ]
    assert len(read_notifications(stack.data_dir)[0]) == 4
    revoked = [r for r in stack.audit() if r["code"] == "capability.grant_revoked"]
    assert len(revoked) == 1 and revoked[0]["source"] == "capability_gateway"


def _known(stack: Stack) -> set[str]:
    """Every card the chat has shown so far, open or closed."""
    from apps.chat import history

    return {
        str(item["interaction"]["interaction_id"])
        for item in history(stack.data_dir, CONVERSATION)["timeline"]
        if item.get("sender") == "runtime:capabilities"
    }
