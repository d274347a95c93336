"""The gateway SIGKILLed after an effect and before its record (a crash point in the gateway
itself): the request has one outcome, an effect that cannot be repeated is not run again and
ends `in_doubt` (a notification: `test_desktop`), and one that can (`file.save`; speech:
`test_speech`) is run again to the same result. A request waiting for the user outlives a
kill of the gateway. A request whose call ends first (the app killed, the call cancelled) is
taken back: its card closes, and a late answer starts nothing."""

from __future__ import annotations

import os
from pathlib import Path

from actors.capability_gateway import read_notifications
from tests.installed.helpers import killed_and_back
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import final_of

from .helpers import (
    AFTER_EFFECT,
    answer,
    ask,
    asked,
    audit_of,
    card_for,
    cards,
    crashing_once,
    keeper_ready,
    outcome,
    requests,
)


async def test_a_save_cut_short_by_a_kill_is_saved_once(
    stack: Stack, keeper: tuple[Path, Path], tmp_path: Path
) -> None:
    agent = await keeper_ready(stack, keeper, env=crashing_once(tmp_path / "once"))
    data = {"name": "notes.txt", "data_base64": "aGVsbG8="}
    await ask(agent, "s-1", "file.save", data, front=True)
    answer(stack, await card_for(stack, "file.save"), "once")
    assert await outcome(stack, "s-1") == {"status": "completed", "output": {"name": "notes.txt"}}
    assert (tmp_path / "once" / AFTER_EFFECT).exists()
    downloads = stack.data_dir / "downloads"
    assert os.listdir(downloads) == ["notes.txt"]  # no second copy, no temporary file left
    assert (downloads / "notes.txt").read_text() == "hello"
    [row] = requests(stack)
    assert await audit_of(stack, row["request_id"]) == [
        "capability.consent_asked",
        "capability.started",
        "capability.completed",
    ]


async def test_a_request_waiting_for_the_user_outlives_a_kill_of_the_gateway(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    # Finished requests are forgotten at the gateway's start; open ones never.
    agent = await keeper_ready(stack, keeper, gateway={"keep_finished_s": 0})
    refused = await asked(agent, "w-0", "camera.capture")
    assert refused["status"] == "permission_denied"
    await ask(agent, "w-1", "notification.show", {"text": "after the kill"})
    card = await card_for(stack, "notification.show")
    assert stack.runtime is not None
    before = stack.runtime.actors()["capability_gateway"]["restarts"]
    assert stack.kill("capability_gateway")
    await wait_for(
        lambda: (
            stack.runtime is not None
            and stack.runtime.actors()["capability_gateway"]["restarts"] > before
            and stack.runtime.actors()["capability_gateway"]["state"] == "running"
        ),
        30,
        "the gateway restarted",
    )
    # The request waited in the store; the user's answer reaches the new incarnation, which
    # answers the keeper's call.
    answer(stack, card, "once")
    assert await outcome(stack, "w-1") == {"status": "completed", "output": {"shown": True}}
    assert [n["text"] for n in read_notifications(stack.data_dir)[0]] == ["after the kill"]
    [row] = requests(stack)  # the refused one forgotten, its audit row kept
    assert await audit_of(stack, row["request_id"]) == [
        "capability.consent_asked",
        "capability.started",
        "capability.completed",
    ]
    assert [a["code"] for a in stack.audit() if "camera.capture" in a["detail"]] == [
        "capability.permission_denied"
    ]


async def test_a_request_whose_call_ended_first_is_taken_back(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    agent = await keeper_ready(stack, keeper)
    # The keeper killed while the user looks at the card: its call ends (it is no
    # idempotent one) and the request is taken back by the restarted keeper.
    await ask(agent, "k-1", "notification.show", {"text": "never shown"})
    killed = await card_for(stack, "notification.show")
    await killed_and_back(stack, "app.keeper")
    row = await final_of(stack, "call_k-1", 60)
    assert (row["state"], row["code"]) == ("failed", "handler_failed"), row
    # The agent cancels the call while the user looks at the card.
    await ask(agent, "k-2", "notification.show", {"text": "never shown either"})
    cancelled = await card_for(stack, "notification.show", {killed})
    await agent.client.cancel(CONVERSATION, "call_k-2", "keeper")
    row = await final_of(stack, "call_k-2", 60)
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user"), row

    await wait_for(lambda: not cards(stack), 30, "both cards closed")
    assert [(r["status"], r["code"]) for r in requests(stack)] == [("failed", "withdrawn")] * 2
    for request in requests(stack):
        assert await audit_of(stack, request["request_id"]) == [
            "capability.consent_asked",
            "capability.withdrawn",
        ]
    # The user's late answers start nothing and grant nothing: the next request asks.
    answer(stack, killed, "once")
    answer(stack, cancelled, "always")
    await ask(agent, "k-3", "notification.show", {"text": "asked anew"})
    answer(stack, await card_for(stack, "notification.show", {killed, cancelled}), "once")
    assert await outcome(stack, "k-3") == {"status": "completed", "output": {"shown": True}}
    assert [n["text"] for n in read_notifications(stack.data_dir)[0]] == ["asked anew"]
    assert stack.runtime is not None and not stack.runtime.actors()["app.keeper"]["dead"]
