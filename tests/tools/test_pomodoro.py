"""The demo agent uses pomodoro's tools when the user asks for focus time: `lineup run
--headless` (embedded AppServer and demo agent), pomodoro installed through the CLI, the user
writes "focus 5" in the chat, the agent calls `pomodoro.start`, the timer's app comes to the
front for the call, the runtime starts the timer's deadline operation and the agent tells
the user it runs, and until when; the user stops it in the chat, the call ends
`cancelled_by_user` and chat comes back to the front."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from actors.app_manager.registry import read_apps
from actors.store import read_lifecycle
from actors.tool_router import read_inventories, read_tool_calls, read_tool_deadlines
from apps.chat import history
from contracts import utc_timestamp
from lineup.ui_session import UiSession
from tests.app_manager.conftest import Bundles, lineup
from tests.runtime.helpers import given_to_agent, wait_for
from tests.runtime.test_lineup_run import _start, _stop

CONVERSATION = "conv-focus"


def _say(data_dir: Path, text: str) -> None:
    UiSession(data_dir, session_id="test").act(
        {"kind": "send", "conversation_id": CONVERSATION, "text": text}
    )


async def _agent_said(data_dir: Path, start: str) -> str:
    def said() -> str | None:
        for item in history(data_dir, CONVERSATION)["timeline"]:
            if item["sender"].startswith("agent:") and item["text"].startswith(start):
                return str(item["text"])
        return None

    return await wait_for(said, 60, f"the agent to say {start!r}")


async def test_focus_starts_a_timer_through_the_pomodoro_tool(
    tmp_path: Path, bundles: Bundles
) -> None:
    data_dir = tmp_path / "data"
    process = _start(data_dir, tmp_path / "run.log")
    try:

        def online() -> bool:
            assert process.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            record = read_lifecycle(data_dir) if (data_dir / "runtime.db").exists() else None
            return record is not None and record["state"] == "online"

        await wait_for(online, 30, "the runtime to be online")
        _say(data_dir, "focus 5")  # nothing offers a timer yet
        await _agent_said(data_dir, "Pomodoro is not available")

        (data_dir / "trusted_keys").mkdir(exist_ok=True)
        shutil.copy(bundles.keys / "publisher.pub", data_dir / "trusted_keys")
        for args in (("install", bundles.v1), ("enable", "pomodoro")):
            code, out, err = lineup("app", *args, "--data-dir", data_dir)
            assert code == 0, out + err

        await wait_for(lambda: _inventory_lists(data_dir, "pomodoro.start"), 30, "the tool")
        _say(data_dir, "focus 5")
        text = await _agent_said(data_dir, "Your 5-minute focus timer has started")
        calls = [c for c in read_tool_calls(data_dir) if c["method"] == "pomodoro.start"]
        assert [(c["state"], c["arguments"]) for c in calls] == [("deadline", {"minutes": 5})]
        call_id = calls[0]["call_id"]
        # The runtime keeps the timer: it started it in front and told the agent when it ends.
        timer = read_tool_deadlines(data_dir)[call_id]
        assert (timer["state"], timer["duration_ms"]) == ("running", 300_000)
        assert timer["display"] == {"minutes": 5}
        assert timer["instance_id"] == f"pomodoro:{CONVERSATION}"
        ends_at = utc_timestamp(datetime.fromtimestamp(timer["ends_ms"] / 1000, UTC))
        assert text == f"Your 5-minute focus timer has started, until {ends_at}."
        events = [h["event"] for h in calls[0]["history"]]
        assert events[:3] == ["accepted", "starting", "activation_ready"]
        assert events[-2:] == ["deadline", "started"]
        # `started` says the timer is ready, in front and running: no separate receipt.
        receipts = [
            env["type"].removeprefix("lineup.tool.")
            for env in given_to_agent(data_dir / "appserver")
            if env.get("correlation", {}).get("call_id") == call_id
        ]
        assert receipts == ["accepted", "starting", "progress"], receipts
        # The app shows the runtime's timer: its display state, in its session data.
        instance = f"pomodoro:{CONVERSATION}"
        running = {"state": "running", "minutes": 5, "call_id": call_id, "ends_at": ends_at}
        await wait_for(lambda: _shown(data_dir, instance) == running, 30, "the timer shown")

        await _the_user_stops_it(data_dir, call_id, running)
        _the_agent_reads_and_stops_one(data_dir)
        # The timer came to the front for the call; chat is given back once it ended.
        await wait_for(
            lambda: (read_apps(data_dir)["settings"].get("focus_stack") or [""])[-1] == "chat:main",
            30,
            "chat back in front",
        )
        assert f"pomodoro:{CONVERSATION}" in read_apps(data_dir)["settings"]["focus_stack"]
    finally:
        _stop(process)


async def _the_user_stops_it(data_dir: Path, call_id: str, running: dict[str, Any]) -> None:
    """The chat shows the call in the conversation, running: the user stops it there. The
    call ends `cancelled_by_user`, the runtime's timer says so, and so does what the app
    shows."""
    instance = f"pomodoro:{CONVERSATION}"

    def shown(state: str) -> dict[str, Any] | None:
        view = history(data_dir, CONVERSATION)
        tool = next((i for i in view["timeline"] if i["id"] == call_id), None)
        return view if tool is not None and tool["state"] == state else None

    view = await wait_for(lambda: shown("running"), 30, "the running call in the chat")
    assert view["tasks"][call_id]["status"] == "running"
    UiSession(data_dir, session_id="test").act(
        {"kind": "stop", "conversation_id": CONVERSATION, "call_id": call_id}
    )
    view = await wait_for(lambda: shown("failed"), 30, "the stopped call in the chat")
    tool = next(i for i in view["timeline"] if i["id"] == call_id)
    assert (tool["kind"], tool["text"], tool["code"]) == (
        "tool", "Start a focus timer · Pomodoro", "cancelled_by_user",
    )  # fmt: skip
    assert view["tasks"][call_id]["status"] == "cancelled"
    row = next(c for c in read_tool_calls(data_dir) if c["call_id"] == call_id)
    assert row["detail"].startswith("interrupted by the user; it was to end at ")
    stopped = read_tool_deadlines(data_dir)[call_id]
    assert stopped["ended_by"] == "the user"
    ended_at = utc_timestamp(datetime.fromtimestamp(stopped["ended_ms"] / 1000, UTC))
    await wait_for(
        lambda: _shown(data_dir, instance) == {**running, "state": "stopped", "ended_at": ended_at},
        30,
        "the stopped timer shown",
    )


def _the_agent_reads_and_stops_one(data_dir: Path) -> None:
    """Through the agent's command line on the embedded AppServer: a one-minute timer
    started, its status read from the runtime's record, then stopped with `pomodoro.stop`."""

    def call(tool: str, arguments: str = "{}") -> dict[str, Any]:
        argv = ("agent", "call", "--conversation", CONVERSATION, "--tool", tool)
        code, out, err = lineup(*argv, "--args", arguments, "--json", "--data-dir", data_dir)
        assert code == 0, out + err
        return dict(json.loads(out))

    started = call("pomodoro.start", '{"minutes": 1}')
    assert started["outcome"] == "started", started
    status = call("pomodoro.status")["output"]
    assert (status["state"], status["minutes"], status["ends_at"]) == (
        "running", 1, started["ends_at"],
    )  # fmt: skip
    assert 0 < status["remaining_seconds"] <= 60
    assert call("pomodoro.stop")["output"] == {"stopped": True}
    row = next(c for c in read_tool_calls(data_dir) if c["call_id"] == started["call_id"])
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    assert row["detail"].startswith("interrupted by the agent (pomodoro.stop, call ")
    assert call("pomodoro.status")["output"]["state"] == "stopped"


def _shown(data_dir: Path, instance_id: str) -> dict[str, Any] | None:
    """What the app keeps in the instance's session data (runtime.db, read-only)."""
    db = sqlite3.connect(f"file:{data_dir / 'runtime.db'}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT data FROM app_session_data WHERE app_scope = 'pomodoro' AND instance_id = ?",
            (instance_id,),
        ).fetchone()
    finally:
        db.close()
    return json.loads(row[0]) if row else None


def _inventory_lists(data_dir: Path, method: str) -> bool:
    return any(
        row["conversation_id"] == CONVERSATION
        and any(t["method"] == method for t in row["payload"]["tools"])
        for row in read_inventories(data_dir)
    )
