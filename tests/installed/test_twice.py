"""Each tool of the sample apps called twice at once on one instance: every call ends with
exactly one final within a bounded time, and the app's state after is what the two calls
together say. The apps are built, signed and installed through the CLI on one real runtime.

- A timer or a round is one at a time: of two starts, one runs and the other is refused at
  once (`already_running`, saying until when the open one runs); a start while one runs is
  refused within a second, and the running one goes on untouched. No call is cancelled
  for a user who did nothing, and none hangs.
- The whiteboard's tools each answer both calls: the board is created once and kept, read
  and exported twice, saved twice as two files once the user allows each.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from actors.tool_router import read_tool_deadlines
from tests.capabilities.helpers import answer, card_for
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.tools.helpers import Agent, call_row, final_of, finals, new_revision, tools_of
from tests.web.conftest import start_web_runtime
from tests.web.test_surfaces import session_rows

from .helpers import SampleApps, SignedApp, install_enabled

APPS = {"pomodoro": "pomodoro", "draw_and_guess": "draw-and-guess", "whiteboard": "whiteboard"}
# How long a call refused because another runs may take to end, from its submission.
REFUSED_WITHIN_S = 1.0


@pytest.fixture(scope="module")
def bundles(sample_apps: SampleApps) -> dict[str, SignedApp]:
    return {scope: sample_apps(package, scope) for package, scope in APPS.items()}


def operation(stack: Stack, call_id: str) -> dict[str, Any]:
    return read_tool_deadlines(stack.data_dir).get(call_id) or {}


def final_codes(stack: Stack, call_id: str) -> list[str]:
    """The codes (or `result`) of every final the runtime queued for the call."""
    return [
        env["payload"]["code"] if env["type"] == "lineup.tool.error" else "result"
        for env in finals(stack, call_id)
    ]


async def twice(
    agent: Agent, method: str, ids: tuple[str, str], arguments: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Both calls submitted back to back; their rows once each has its final."""
    for call_id in ids:
        await agent.client.submit(agent.invoke(call_id, method, arguments))
    return [await final_of(agent.stack, call_id, 60) for call_id in ids]


async def refused_at_once(agent: Agent, call_id: str, method: str, args: dict[str, Any]) -> str:
    """A start while one runs: refused within `REFUSED_WITHIN_S`; its message."""
    submitted = time.monotonic()
    await agent.client.submit(agent.invoke(call_id, method, args))
    row = await final_of(agent.stack, call_id, 30)
    took = time.monotonic() - submitted
    assert (row["state"], row["code"]) == ("failed", "already_running"), row
    assert took < REFUSED_WITHIN_S, f"refused after {took:.2f} s"
    print(f"{method} while one runs: refused after {took * 1000:.0f} ms")
    return str(row["detail"])


async def two_starts(agent: Agent, method: str, ids: tuple[str, str], args: dict[str, Any]) -> str:
    """Two starts at once: one runs, the other is refused (`already_running`) and never
    had an operation. The one that runs."""
    stack = agent.stack
    for call_id in ids:
        await agent.client.submit(agent.invoke(call_id, method, args))
    refused = await wait_for(
        lambda: next((c for c in ids if _row_if_final(stack, c)), None), 30, "one start refused"
    )
    row = call_row(stack, refused) or {}
    assert (row["state"], row["code"]) == ("failed", "already_running"), row
    assert "already has an operation running until " in row["detail"], row["detail"]
    assert operation(stack, refused) == {}
    (running,) = [c for c in ids if c != refused]
    await wait_for(lambda: operation(stack, running).get("state") == "running", 30, "the other")
    return running


async def test_each_sample_tool_called_twice_at_once(
    stack: Stack, bundles: dict[str, SignedApp]
) -> None:
    await start_web_runtime(stack)
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    revision = await new_revision(stack, 0)
    for app in bundles.values():
        await install_enabled(stack, app)
    await wait_for(
        lambda: {"pomodoro.start", "game.start_round", "board.save"} <= set(tools_of(stack)),
        30,
        "the sample apps' tools in the inventory",
    )
    assert await new_revision(stack, revision)
    await pomodoro_twice(Agent(stack, client, "pomodoro"))
    await rounds_twice(Agent(stack, client, "draw-and-guess"))
    await whiteboard_twice(Agent(stack, client, "whiteboard"))


async def pomodoro_twice(agent: Agent) -> None:
    stack = agent.stack
    minutes = {"minutes": 25}
    # Two starts at once, the app not yet launched: one timer runs, the other is refused.
    first = await two_starts(agent, "pomodoro.start", ("call_start_a", "call_start_b"), minutes)
    running = operation(stack, first)

    # A third start while it runs: refused at once, saying until when it runs and how to
    # stop it; the running timer goes on, its end unchanged.
    detail = await refused_at_once(agent, "call_start_c", "pomodoro.start", minutes)
    assert f"(call {first})" in detail and "stop it first" in detail, detail
    assert operation(stack, first) == running
    # The app shows the running timer, not the refused ones.
    shown = await wait_for(
        lambda: (s := _session(stack, "pomodoro")).get("state") == "running" and s,
        30,
        "the running timer shown",
    )
    assert shown["call_id"] == first

    # Status twice at once: both say it runs.
    rows = await twice(agent, "pomodoro.status", ("call_status_a", "call_status_b"))
    assert [r["output"]["state"] for r in rows] == ["running", "running"], rows

    # Stop twice at once: one stopped it, the other found none; the timer's call has one
    # final, the agent's stop.
    rows = await twice(agent, "pomodoro.stop", ("call_stop_a", "call_stop_b"))
    assert sorted(r["output"]["stopped"] for r in rows) == [False, True], rows
    row = await final_of(stack, first)
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    assert "interrupted by the agent (pomodoro.stop" in row["detail"], row["detail"]
    for call_id in ("call_start_a", "call_start_b", "call_start_c", first):
        assert len(final_codes(stack, call_id)) == 1, (call_id, finals(stack, call_id))
    # Nothing open is left in the way: the next start runs.
    await agent.client.submit(agent.invoke("call_start_d", "pomodoro.start", minutes))
    await wait_for(
        lambda: operation(stack, "call_start_d").get("state") == "running", 30, "a new timer"
    )
    row = await agent.call("call_stop_d", "pomodoro.stop")
    assert row["output"] == {"stopped": True}


async def rounds_twice(agent: Agent) -> None:
    stack = agent.stack
    round_of = {"mode": "user_draws", "word": "house", "seconds": 120}
    first = await two_starts(agent, "game.start_round", ("call_round_a", "call_round_b"), round_of)
    running = operation(stack, first)
    detail = await refused_at_once(agent, "call_round_c", "game.start_round", round_of)
    assert f"(call {first})" in detail, detail
    assert operation(stack, first) == running
    # The game keeps the running round as the instance's: round 1, of the call that runs.
    rounds = stack.data_dir / "apps" / "draw-and-guess" / "rounds.json"
    kept = await wait_for(
        lambda: _current_round(rounds).get("ends_at") and _current_round(rounds),
        30,
        "the running round kept",
    )
    assert (kept["call_id"], kept["round"], kept["state"]) == (first, 1, "playing")
    shown = _session(stack, "draw-and-guess")
    assert (shown["round"], shown["state"], shown["word"]) == (1, "playing", "house")
    # The agent cancels it: one final, the round shown stopped.
    await agent.client.submit(agent.cancel(first))
    row = await final_of(stack, first)
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user")
    for call_id in ("call_round_a", "call_round_b", "call_round_c"):
        assert len(final_codes(stack, call_id)) == 1, (call_id, finals(stack, call_id))
    shown = await wait_for(
        lambda: (s := _session(stack, "draw-and-guess")).get("state") == "ended" and s,
        30,
        "the round shown ended",
    )
    assert (shown["round"], shown["outcome"]) == (1, "stopped"), shown
    # The refused rounds were never the game's, and none waits aside any more.
    kept = json.loads(rounds.read_text())
    assert [r["call_id"] for r in kept["rounds"].values()] == [first]
    assert kept["pending"] == {}, kept["pending"]


async def whiteboard_twice(agent: Agent) -> None:
    stack = agent.stack
    rows = await twice(agent, "board.create", ("call_create_a", "call_create_b"), {"title": "T"})
    assert [r["state"] for r in rows] == ["succeeded", "succeeded"], rows
    instances = {r["output"]["instance_id"] for r in rows}
    assert instances == {f"whiteboard:{CONVERSATION}"}, rows
    rows = await twice(agent, "board.summary", ("call_summary_a", "call_summary_b"))
    assert rows[0]["output"] == rows[1]["output"], rows
    assert rows[0]["output"]["title"] == "T"
    rows = await twice(agent, "board.export", ("call_export_a", "call_export_b"), {})
    assert [r["state"] for r in rows] == ["succeeded", "succeeded"], rows
    assert [len(r["output"]["artifacts"]) for r in rows] == [2, 2], rows

    # Saved twice at once: two cards; the user allows each, and each call saves a file.
    for call_id in ("call_save_a", "call_save_b"):
        await agent.client.submit(agent.invoke(call_id, "board.save", {"format": "svg"}))
    first = await card_for(stack, "file.save")
    second = await card_for(stack, "file.save", {first})
    answer(stack, first, "once")
    answer(stack, second, "once")
    rows = [await final_of(stack, c, 60) for c in ("call_save_a", "call_save_b")]
    assert sorted(r["output"]["name"] for r in rows) == ["T (1).svg", "T.svg"], rows
    assert sorted(p.name for p in (stack.data_dir / "downloads").iterdir()) == [
        "T (1).svg",
        "T.svg",
    ]
    for kind in ("create", "summary", "export", "save"):
        for call_id in (f"call_{kind}_a", f"call_{kind}_b"):
            assert final_codes(stack, call_id) == ["result"], (call_id, finals(stack, call_id))


def _row_if_final(stack: Stack, call_id: str) -> dict[str, Any] | None:
    row = call_row(stack, call_id)
    return row if row and row["state"] in ("succeeded", "failed") else None


def _session(stack: Stack, scope: str) -> dict[str, Any]:
    rows = [data for _, data, _ in session_rows(stack.data_dir, scope)]
    return dict(json.loads(rows[0]) or {}) if rows else {}


def _current_round(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    rounds = json.loads(path.read_text()).get("rounds", {})
    return dict(next(iter(rounds.values()), {}))
