"""The demo agent's conversation script, seen from the user's side of the AppServer."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import trio

from contracts import validate_message
from link import Link
from peers.agent import AgentClient, run_demo_agent
from peers.appserver import AppServer

from .conftest import StartAppServer
from .helpers import collect, runtime_link, user_answer, user_text


@contextlib.asynccontextmanager
async def _demo(server: AppServer, state_dir: Path | None = None) -> AsyncIterator[None]:
    credentials = server.credentials
    async with trio.open_nursery() as nursery:
        client = await nursery.start(
            partial(
                run_demo_agent,
                server.url,
                agent_id=credentials.agent_id,
                token=credentials.agent_token,
                state_dir=state_dir,
                backoff_initial=0.01,
            )
        )
        assert isinstance(client, AgentClient)
        yield
        nursery.cancel_scope.cancel()


def _summary(message: dict[str, Any]) -> tuple[Any, ...]:
    envelope = validate_message(message)
    payload: Any = envelope.payload
    if envelope.type == "lineup.message":
        return ("say", payload["text"])
    if envelope.type == "lineup.task.progress":
        return ("task", payload["status"], payload["percent"], payload["label"])
    if envelope.type == "lineup.interaction.withdraw":
        return ("withdraw", payload["interaction_id"], payload["reason"])
    extra = [option["id"] for option in payload.get("options", [])]
    return ("ask", payload["kind"], payload["interaction_id"], payload["prompt"], *extra)


async def _from_agent(link: Link, count: int) -> list[tuple[Any, ...]]:
    got = await collect(link, count, keep=lambda m: m["sender"]["kind"] == "agent")
    return [_summary(received.message) for received in got]


async def test_the_demo_answers_shows_a_task_asks_three_questions_and_reacts(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    async with _demo(server), runtime_link(server) as user:
        hello = user_text("Ask me something!", conversation="conv-demo")
        await user.submit(hello)
        trigger = hello["id"]
        assert await _from_agent(user, 5) == [
            (
                "say",
                "**Hello!** You wrote:\n\n> Ask me something!\n\nLet me show you what I can do.",
            ),
            ("task", "running", 0, "Reading your message"),
            ("task", "running", 50, "Thinking it over"),
            ("task", "succeeded", 100, "Done"),
            (
                "ask",
                "choice",
                f"colour.{trigger}",
                "Which colour should the board be?",
                "red",
                "green",
                "blue",
            ),
        ]
        await user.submit(
            user_answer(f"colour.{trigger}", "choice", "conv-demo", selected=["green"])
        )
        assert await _from_agent(user, 2) == [
            ("say", "You picked **Green**."),
            ("ask", "confirm", f"create.{trigger}.green", "Shall I create a green board now?"),
        ]
        await user.submit(
            user_answer(f"create.{trigger}.green", "confirm", "conv-demo", confirmed=True)
        )
        assert await _from_agent(user, 2) == [
            ("say", "Great, let's do it."),
            ("ask", "input", f"name.{trigger}.green", "What should the board be called?"),
        ]
        await user.submit(
            user_answer(f"name.{trigger}.green", "input", "conv-demo", text="Sprint 12")
        )
        assert await _from_agent(user, 1) == [
            ("say", "Done: the green board **Sprint 12** is ready."),
        ]


async def test_the_demo_takes_no_for_an_answer(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    async with _demo(server), runtime_link(server) as user:
        hello = user_text("ask me something")
        await user.submit(hello)
        trigger = hello["id"]
        await _from_agent(user, 5)
        await user.submit(user_answer(f"colour.{trigger}", "choice", "conv-1", selected=["red"]))
        await _from_agent(user, 2)
        await user.submit(
            user_answer(f"create.{trigger}.red", "confirm", "conv-1", confirmed=False)
        )
        assert await _from_agent(user, 2) == [
            ("say", "No problem, no board then."),
            ("ask", "input", f"note.{trigger}", "Anything I should remember?"),
        ]
        await user.submit(user_answer(f"note.{trigger}", "input", "conv-1", text="Buy milk"))
        assert await _from_agent(user, 1) == [("say", "Noted:\n\n> Buy milk")]


async def test_a_restarted_demo_repeats_nothing(
    start_appserver: StartAppServer, tmp_path: Path
) -> None:
    server = await start_appserver()
    state = tmp_path / "demo-state"
    async with runtime_link(server) as user:
        async with _demo(server, state):
            trigger = user_text("ask me something")
            await user.submit(trigger)
            first = await _from_agent(user, 5)
        accepted = server.statistics().accepted
        # As if the demo had crashed before saving its cursor: it handles the first again.
        # (Stopped at once, it may not have saved it yet: the same case.)
        (state / "cursor.json").unlink(missing_ok=True)
        async with _demo(server, state):
            await user.submit(user_text("Ask me something."))
            again = await _from_agent(user, 6)
        stats = server.statistics()
    assert first[0][1].endswith("> ask me something\n\nLet me show you what I can do.")
    # The second message moved on past the first's question (which the replay of the first
    # left open): withdrawn once, before the answer to the second.
    assert again[0] == ("withdraw", f"colour.{trigger['id']}", "the conversation moved on")
    assert again[1][1].endswith("> Ask me something.\n\nLet me show you what I can do.")
    # The replayed reactions to the first were the same ids: recognised, not accepted again.
    assert stats.accepted == accepted + 1 + 6
    assert stats.duplicates >= 5


async def test_the_demo_says_what_it_can_do_from_the_live_inventory(
    start_appserver: StartAppServer,
) -> None:
    from tests.runtime.test_agent_tools_cli import START, inventory

    server = await start_appserver()
    async with _demo(server), runtime_link(server) as runtime:
        await runtime.submit(user_text("What can you do?", conversation="conv-none"))
        ((_, said),) = await _from_agent(runtime, 1)
        assert said.startswith("Here is what I can do here. No app gives me tools in this")
        assert "`ask me something`" in said

        # The runtime publishes what the agent may use here: the answer lists it.
        board = {
            "app_scope": "whiteboard",
            "method": "board.create",
            "contract_version": "1",
            "title": "Open the *whiteboard*",
            "description": "A board the agent draws on",
            "input_schema": {"type": "object"},
            "output_schema": {"type": "object"},
        }
        published = inventory(4, [START, board], conversation="conv-tools")
        published["payload"]["apps"] = [
            {"app_scope": "pomodoro", "version": "1.0.0", "title": "Pomodoro"},
            {"app_scope": "whiteboard", "version": "1.0.0", "title": "Whiteboard"},
        ]
        assert (await runtime.submit(published)).status == "accepted"
        await runtime.submit(user_text("bake me a cake", conversation="conv-tools"))
        ((_, said),) = await _from_agent(runtime, 1)
    assert said == (
        "I don't know how to help with that yet. Here is what I can do here.\n\n"
        "- **Start a focus timer** (Pomodoro)\n"
        "- **Open the \\*whiteboard\\*** (Whiteboard): A board the agent draws on\n\n"
        "Things to try: `draw a house`, `focus 25`.\n\n"
        "Say `ask me something` to see how I ask you questions."
    )
