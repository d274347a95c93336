"""A tool call from the agent's submit to its one final outcome, through the real runtime:
every way a handler can end, receipts, progress, duplicates, cancel, timeouts, and the
foreground a call needs given back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from actors.app_manager.registry import read_apps
from apps.chat import history
from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .helpers import (
    call_row,
    effects,
    final_of,
    finals,
    sent,
    stream_finals,
    toolbox_ready,
)


def _receipts(stack: Stack, call_id: str) -> list[str]:
    return [
        env["type"].removeprefix("lineup.tool.")
        for env in sent(stack, "lineup.tool.accepted")
        + sent(stack, "lineup.tool.starting")
        + sent(stack, "lineup.tool.activation_ready")
        + sent(stack, "lineup.tool.progress")
        if env["correlation"]["call_id"] == call_id
    ]


async def test_every_way_a_call_ends(stack: Stack, toolbox: tuple[Path, Path]) -> None:
    agent = await toolbox_ready(stack, toolbox)
    # The app is not running: the first call launches it in the background.
    row = await agent.call("call_echo", "box.echo", arguments={"value": "hi"})
    assert row["state"] == "succeeded" and row["output"] == {"echo": "hi"}
    assert _receipts(stack, "call_echo") == ["accepted", "starting", "activation_ready"]
    assert [e["type"] for e in finals(stack, "call_echo")] == ["lineup.tool.result"]

    expected = {
        "call_fail": ("box.fail", "handler_failed"),
        "call_refuse": ("box.refuse", "permission_denied"),
        "call_bad": ("box.bad_output", "handler_failed"),
        "call_hang": ("box.hang", "operation_expired"),
    }
    for call_id, (method, code) in expected.items():
        row = await agent.call(call_id, method)
        assert (row["state"], row["code"]) == ("failed", code), row
        errors = finals(stack, call_id)
        assert [e["payload"]["code"] for e in errors] == [code]
        assert "RuntimeError" not in str(errors) and "Traceback" not in str(errors)
    for call_id in ("call_fail", "call_bad", "call_hang"):
        audited = await stack.audit_of(call_row(stack, call_id)["envelope_id"])
        assert audited["code"] == expected[call_id][1]
    # A schema-violating output is never relayed.
    assert "not a number" not in str(finals(stack, "call_bad"))

    row = await agent.call("call_slow", "box.slow")
    assert row["state"] == "succeeded"
    progress = [e["payload"] for e in sent(stack, "lineup.tool.progress")]
    assert [p.get("percent") for p in progress] == [0, 50, 100]
    assert progress[0]["stage"] == "started"

    # The chat shows each call as a task: the slow one ran to 100 %, the refused one failed.
    def task(call_id: str) -> dict[str, Any]:
        return dict(history(stack.data_dir, CONVERSATION)["tasks"].get(call_id) or {})

    await wait_for(lambda: task("call_slow").get("status") == "succeeded", 30, "the chat's task")
    assert task("call_slow") == {
        "label": "box.slow · Toolbox",  # no title of its own: its method, and the app's title
        "status": "succeeded",
        "percent": 100,
    }
    assert task("call_refuse")["status"] == "failed"

    # The same call id again, in a new envelope: the recorded outcome, no second run.
    row = await agent.call("call_count", "box.count")
    assert row["output"] == {"n": 1}
    retry = agent.invoke("call_count", "box.count")
    await agent.client.submit(retry)
    await wait_for(lambda: len(finals(stack, "call_count")) == 2, 30, "the outcome again")
    again = finals(stack, "call_count")[1]
    assert again["correlation"]["reply_to"] == retry["id"]
    assert again["payload"] == {"output": {"n": 1}}
    assert effects(stack) == ["call_count"]

    # Everything the agent is given: one final per call, and only one.
    # Every call's final, and the retry's answer too, which the transport may send last.
    await wait_for(
        lambda: (s := stream_finals(stack)) and len(s) >= 7 and len(s["call_count"]) >= 2,
        30,
        "the finals in the AppServer's stream",
    )
    stream = stream_finals(stack)
    assert all(len(types) == 1 for call, types in stream.items() if call != "call_count")
    assert stream["call_count"] == ["lineup.tool.result"] * 2  # the call, and the retry's answer


async def test_cancel_and_the_foreground_given_back(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    agent = await toolbox_ready(stack, toolbox)
    await agent.client.submit(agent.invoke("call_sleep", "box.sleep"))
    await wait_for(
        lambda: (call_row(stack, "call_sleep") or {}).get("state") == "running", 30, "running"
    )
    cancel = agent.client.envelope(
        "lineup.tool.cancel",
        CONVERSATION,
        {"reason": "changed my mind"},
        app_scope="toolbox",
        target_kind="runtime",
        call_id="call_sleep",
    )
    await agent.client.submit(cancel)
    row = await final_of(stack, "call_sleep")
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")

    def foreground() -> str | None:
        stack_ = read_apps(stack.data_dir)["settings"].get("focus_stack") or []
        return str(stack_[-1]) if stack_ else None

    before = await wait_for(foreground, 30, "a foreground app")
    row = await agent.call("call_front", "box.front")
    assert row["state"] == "succeeded"
    assert any(h["event"] == "activation_ready" for h in row["history"])
    await wait_for(lambda: foreground() == before, 30, f"{before} back in front")


async def test_progress_keeps_a_call_alive_up_to_its_absolute_cap(
    stack: Stack, toolbox: tuple[Path, Path]
) -> None:
    agent = await toolbox_ready(stack, toolbox)
    # The app is running first: its launch is not what the 1 s windows below measure.
    warm = await agent.call("call_warm", "box.echo", arguments={"value": "warm"})
    assert warm["state"] == "succeeded", warm
    row = await agent.call("call_trickle", "box.trickle")  # 2 s on a 1 s timeout
    assert row["state"] == "succeeded", (row["code"], row["detail"], row["history"])
    row = await agent.call("call_forever", "box.forever")  # cap: ten times 0.4 s
    assert (row["state"], row["code"]) == ("failed", "operation_expired")
    took = row["history"][-1]["at_ms"] - row["created_ms"]
    assert 4_000 <= took < 15_000, took
