"""The independent history with real parts: the recording agent against a real AppServer,
and `lineup agent history` reading what a real runtime sent, up or down, checked by the
chaos checker as the soak checks it."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from apps.chat import history
from bench._chaos_check import check, read_jsonl
from lineup.ui_session import UiSession
from peers.agent import AgentClient, Recorder, UiRecorder
from peers.appserver import AppServer
from tests.appserver.helpers import TIMEOUT, collect, runtime_link, user_text
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.runtime.test_agent_tools_cli import START, answer, inventory


@pytest.fixture
async def stack(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[Stack]:
    the_stack = Stack(tmp_path, nursery)
    try:
        yield the_stack
    finally:
        orphans = the_stack.cleanup()
        assert not orphans, f"actor processes outlived their supervisor: {orphans}"


async def lineup(*args: str) -> tuple[int, str, str]:
    done = await trio.run_process(
        [sys.executable, "-m", "lineup.cli", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def received(record: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    return [r for r in record if r["event"] == "received" and r["type"] == type_]


async def test_the_recorder_keeps_what_the_agent_sent_and_received(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    server = AppServer(tmp_path / "appserver")
    await nursery.start(server.serve)
    path = tmp_path / "agent.jsonl"
    async with runtime_link(server) as runtime:
        await runtime.submit(inventory(5, [START]))
        client = AgentClient(
            server.url, agent_id="demo", token=server.credentials.agent_token, backoff_initial=0.01
        )
        await nursery.start(client.run)
        recorder = Recorder(client, path)
        await nursery.start(recorder.run)
        with trio.fail_after(TIMEOUT):
            await client.wait_caught_up()
        message_id = await recorder.send_text(CONVERSATION, "agent says 1")
        call_id = await recorder.call(CONVERSATION, "pomodoro.start", {"minutes": 25})
        got = await collect(runtime, 1, keep=lambda m: m["type"] == "lineup.tool.invoke")
        invoke = got[0].message
        await answer(
            runtime,
            invoke,
            ("lineup.tool.accepted", {}),
            ("lineup.tool.result", {"output": {"state": "running"}}),
            ("lineup.tool.result", {"output": {"state": "again"}}),  # a second final
        )
        with trio.fail_after(TIMEOUT):  # the call's final: the first of the two
            final = await recorder.final(call_id)
        assert (final.type, final.envelope.payload["output"]) == (
            "lineup.tool.result",
            {"state": "running"},
        )
        await runtime.submit(user_text("user says 1"))
        await wait_for(
            lambda: received(read_jsonl(path), "lineup.message"), TIMEOUT, "the user's text"
        )
    recorder.close()
    record = read_jsonl(path)
    sent = [r for r in record if r["event"] == "sent"]
    assert [(r["type"], r["message_id"], r["order"]) for r in sent] == [
        ("lineup.message", message_id, 0),
        ("lineup.tool.invoke", invoke["id"], 1),
    ]
    assert sent[0]["text"] == "agent says 1" and sent[1]["call_id"] == call_id
    assert sent[0]["seq"] < sent[1]["seq"]
    events = [r for r in record if r.get("call_id") == call_id and r["event"] == "received"]
    assert [r["type"] for r in events] == ["lineup.tool.accepted"] + ["lineup.tool.result"] * 2
    assert len({r["message_id"] for r in events}) == 3
    (user,) = received(record, "lineup.message")
    assert (user["text"], user["sender"]["kind"], user["conversation"]) == (
        "user says 1",
        "user",
        CONVERSATION,
    )
    assert [r["seq"] for r in record if r["event"] == "received"] == sorted(
        r["seq"] for r in record if r["event"] == "received"
    )
    # The record holds what the checker needs to see the second final.
    report = check(agent=record, ui=[], chat={}, appserver={})
    assert report["tool_calls"] == {"sent": 1, "one_final": 0, "none": 0, "several": 1}


async def test_lineup_agent_history_shows_what_the_runtime_sent_up_or_down(
    stack: Stack, tmp_path: Path
) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    recorder = Recorder(agent, tmp_path / "agent.jsonl")
    await stack.nursery.start(recorder.run)
    typist = UiRecorder(tmp_path / "ui.jsonl")
    await recorder.send_text(CONVERSATION, "agent says 1")
    await wait_for(stack.timeline, 30, "the agent's text in the chat")
    session = UiSession(stack.data_dir, session_id="test")
    await trio.to_thread.run_sync(typist.type, session, CONVERSATION, "user says 1")
    await wait_for(
        lambda: received(read_jsonl(tmp_path / "agent.jsonl"), "lineup.message"),
        30,
        "the user's text at the agent",
    )
    where = ("--appserver-dir", str(stack.appserver_dir), "--conversation", CONVERSATION)
    status, out, err = await lineup("agent", "history", *where, "--json")
    assert status == 0, err
    shown = json.loads(out)
    messages = shown["messages"]
    assert shown["conversation_id"] == CONVERSATION
    assert [m["seq"] for m in messages] == sorted(m["seq"] for m in messages)
    assert {m["sender"]["kind"] for m in messages} <= {"user", "runtime"}  # not the agent's
    (user,) = [m for m in messages if m["type"] == "lineup.message"]
    assert (user["text"], user["sender"]["kind"]) == ("user says 1", "user")
    assert any(m["type"] == "lineup.inventory" for m in messages)

    report = check(
        agent=read_jsonl(tmp_path / "agent.jsonl"),
        ui=read_jsonl(tmp_path / "ui.jsonl"),
        chat={CONVERSATION: history(stack.data_dir, CONVERSATION)},
        appserver={CONVERSATION: shown},
    )
    assert report["agent_to_user"] == report["user_to_agent"]
    assert report["agent_to_user"] == {
        "sent": 1,
        "delivered": 1,
        "lost": 0,
        "duplicated": 0,
        "reordered": 0,
    }
    assert report["failed"] == []

    assert stack.runtime is not None
    stack.runtime.kill9()
    await stack.stop_appserver()
    status, out, err = await lineup("agent", "history", *where, "--json")
    assert (status, json.loads(out)) == (0, shown), err
    status, out, err = await lineup("agent", "history", *where)
    assert status == 0 and "lineup.inventory" in out and user["message_id"] in out, err

    status, out, err = await lineup("agent", "history", *where[:3], "conv-unknown")
    assert status == 1 and out == ""
    assert err.strip() == (
        f"error: the AppServer in {stack.appserver_dir} has no conversation 'conv-unknown' (it "
        f"has '{CONVERSATION}'); pass --conversation with one of them"
    )
    status, _, err = await lineup(
        "agent", "history", "--appserver-dir", str(tmp_path / "nowhere"), *where[2:]
    )
    assert status == 1 and "there is no AppServer record in" in err and "Traceback" not in err
