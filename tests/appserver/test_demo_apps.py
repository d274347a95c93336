"""The demo agent drives the sample apps' tools: a real runtime on a real AppServer, the demo
agent on a WebSocket, the user typing in the chat through the host actor, and the apps
built, signed and installed through the CLI: the real whiteboard, draw-and-guess and
pomodoro, and `boardgame`, a stand-in with the whiteboard's and draw-and-guess's tools and
their contracts' schemas whose round ends when the test says (a real round ends by the
user's hand in its surface, or at its time-up).

What happened is read from the chat's timeline (each reaction once, by the id derived from
the user's message) and the runtime's own records: its tool calls, the board instance's
session data, its artifacts.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.store import read_artifacts
from actors.tool_router import read_inventories, read_tool_calls
from contracts import derive_message_id
from lineup.ui_session import UiSession
from peers.agent import AgentClient, run_demo_agent
from peers.agent._drawings import drawing, word_for
from peers.agent._sample_apps import _recorded, intent_of
from tests.app_manager.conftest import lineup
from tests.installed.conftest import sample_apps  # noqa: F401 - the signed sample apps
from tests.installed.helpers import SampleApps, SignedApp, install_enabled
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.helpers import Stack, wait_for

CONVERSATION = "conv-apps"


@pytest.fixture
async def stack(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[Stack]:
    the_stack = Stack(tmp_path, nursery)
    try:
        yield the_stack
    finally:
        orphans = the_stack.cleanup()
        assert not orphans, f"actor processes outlived their supervisor: {orphans}"


@pytest.fixture(scope="module")
def real_apps(
    sample_apps: SampleApps,  # noqa: F811 - the fixture imported above
) -> list[SignedApp]:
    """The whiteboard and draw-and-guess, built from `apps/` and signed."""
    return [
        sample_apps("whiteboard", "whiteboard"),
        sample_apps("draw_and_guess", "draw-and-guess"),
    ]


@pytest.fixture(scope="module")
def bundles(
    sample_apps: SampleApps,  # noqa: F811 - the fixture imported above
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[SignedApp, SignedApp]:
    """(pomodoro, the boardgame stand-in), signed by one throwaway publisher."""
    pomodoro = sample_apps("pomodoro", "pomodoro")
    bundle = tmp_path_factory.mktemp("demo-apps") / "boardgame.bundle"
    code, _, err = lineup("app", "build", REPO_ROOT / "tests/appserver/boardgame", "--out", bundle)
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", pomodoro.key.with_suffix(".key"))
    assert code == 0, err
    return pomodoro, SignedApp("boardgame", bundle, pomodoro.key)


class Demo:
    """The demo agent on the stack's AppServer, stoppable (its cursor kept in `state_dir`)."""

    def __init__(self, stack: Stack, state_dir: Path) -> None:
        self.stack = stack
        self.state_dir = state_dir
        self.scope = trio.CancelScope()
        self.client: AgentClient | None = None

    async def start(self) -> AgentClient:
        server = self.stack.server
        assert server is not None
        self.scope = trio.CancelScope()

        async def run(task_status: trio.TaskStatus[AgentClient]) -> None:
            with self.scope:
                await run_demo_agent(
                    self.stack.url,
                    agent_id=server.credentials.agent_id,
                    token=server.credentials.agent_token,
                    state_dir=self.state_dir,
                    backoff_initial=0.02,
                    task_status=task_status,
                )

        self.client = await self.stack.nursery.start(run)
        return self.client

    def stop(self) -> None:
        self.scope.cancel()


async def _up(stack: Stack, tmp_path: Path) -> Demo:
    """The AppServer, the runtime and the demo agent, in a conversation it has spoken in."""
    await stack.start_appserver()
    await stack.start_runtime()
    demo = Demo(stack, tmp_path / "demo")
    client = await demo.start()
    await client.send_text(CONVERSATION, "Hello, I am the demo agent.")
    return demo


async def _offered(demo: Demo, *methods: str) -> None:
    """Until the agent's inventory of the conversation lists `methods`."""

    def listed() -> bool:
        assert demo.client is not None
        inventory = demo.client.inventory(CONVERSATION)
        held = {tool.method for tool in (inventory.tools if inventory else [])}
        return set(methods) <= held

    await wait_for(listed, 30, f"{methods} in the agent's inventory")


async def _says(stack: Stack, text: str) -> str:
    """The user types `text` in the chat; the id of the message the agent is sent."""

    def sent() -> list[str]:
        timeline = stack.timeline(CONVERSATION)
        return [i["id"] for i in timeline if i["sender"] == "user" and i["text"] == text]

    before = sent()
    stack.user_says(text, CONVERSATION)
    new = await wait_for(lambda: sent()[len(before) :], 30, f"{text!r} in the chat")
    return new[0]


async def _answer(stack: Stack, trigger: str, index: int = 0) -> str:
    """The text of the agent's reaction `index` to the user's message `trigger`."""
    wanted = derive_message_id(trigger, index)

    def said() -> str | None:
        for item in stack.timeline(CONVERSATION):
            if item["id"] == wanted:
                return str(item["text"])
        return None

    return await wait_for(said, 30, f"reaction {index} to {trigger}")


def _calls(stack: Stack) -> Counter[str]:
    return Counter(row["method"] for row in read_tool_calls(stack.data_dir))


def _call(stack: Stack, call_id: str) -> dict[str, Any]:
    (row,) = [row for row in read_tool_calls(stack.data_dir) if row["call_id"] == call_id]
    return row


def _board(stack: Stack, instance_id: str) -> dict[str, Any] | None:
    db = sqlite3.connect(f"file:{stack.data_dir / 'runtime.db'}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT data FROM app_session_data WHERE instance_id = ?", (instance_id,)
        ).fetchone()
    finally:
        db.close()
    return json.loads(row[0]) if row else None


async def _round_started(stack: Stack, call_id: str) -> None:
    """Until the round has begun (the stand-in's ends at the next summary after that)."""

    def started() -> bool:
        row = _call(stack, call_id)
        assert row["state"] not in ("succeeded", "failed"), row
        # The stand-in's round reports `started` progress; a deadline operation is `started`.
        return any(
            step["event"] == "started" or step.get("stage") == "started" for step in row["history"]
        )

    await wait_for(started, 30, f"{call_id} started")


def _state_patches(stack: Stack) -> list[str]:
    """The instance of each state patch the AppServer took from the agent, in order."""
    db = sqlite3.connect(f"file:{stack.appserver_dir / 'appserver.db'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT body FROM messages WHERE type = 'lineup.app.state.patch' ORDER BY seq"
        ).fetchall()
    finally:
        db.close()
    return [json.loads(body)["scope"]["instance_id"] for (body,) in rows]


def _once(stack: Stack, text: str) -> int:
    return sum(1 for item in stack.timeline(CONVERSATION) if item["text"] == text)


async def test_the_demo_agent_draws_describes_exports_plays_and_focuses(
    stack: Stack, tmp_path: Path, bundles: tuple[SignedApp, SignedApp]
) -> None:
    demo = await _up(stack, tmp_path)
    await wait_for(lambda: read_inventories(stack.data_dir), 30, "the first inventory")

    # Nothing installed yet: each intent says which app to install and enable.
    for text, expected in (
        (
            "draw a cat",
            "board.create is not offered in this conversation, so I cannot draw on"
            " the whiteboard: install and enable the whiteboard app, then ask again.",
        ),
        (
            "what's on the board?",
            "board.summary is not offered in this conversation, so I cannot"
            " look at the whiteboard: install and enable the whiteboard app, then ask again.",
        ),
        (
            "Let's play!",
            "game.start_round is not offered in this conversation, so I cannot play a round"
            " of draw-and-guess: install and enable the draw-and-guess app, then ask again.",
        ),
    ):
        assert await _answer(stack, await _says(stack, text)) == expected
    assert not read_tool_calls(stack.data_dir)

    pomodoro, boardgame = bundles
    await install_enabled(stack, pomodoro)
    await install_enabled(stack, boardgame)
    methods = ("board.create", "board.summary", "board.export", "game.start_round")
    await _offered(demo, "pomodoro.start", *methods)

    # "draw X": a board, then the drawing as one state patch merged into its session data.
    house = await _says(stack, "draw a house")
    assert await _answer(stack, house) == (
        "I drew a house on the whiteboard: 6 shapes on the board **a house**."
    )
    created = _call(stack, f"call_draw-{house}")
    assert (created["state"], created["arguments"]) == ("succeeded", {"title": "a house"})
    instance = created["output"]["instance_id"]
    expected_ids = [f"{house}-{n}" for n in range(1, 7)]

    def drawn() -> dict[str, Any] | None:
        board = _board(stack, instance)
        return board if board and board["order"] else None

    board = await wait_for(drawn, 30, "the drawing on the board")
    assert _state_patches(stack) == [instance]
    assert board["title"] == "a house"
    assert board["order"] == expected_ids
    assert [board["shapes"][key] for key in expected_ids] == drawing("house")

    # A round stays open (until the board is asked about) while the agent answers the rest.
    play = await _says(stack, "let's play")
    word = word_for(play)
    assert await _answer(stack, play, 2) == (
        "A round of draw-and-guess: guess what I drew, you have 90 seconds."
    )
    assert _call(stack, f"call_round-{play}")["arguments"] == {
        "mode": "user_guesses",
        "word": word,
        "seconds": 90,
        "shapes": drawing(word),
    }
    focus = await _says(stack, "focus 1")
    assert (await _answer(stack, focus)).startswith("Your 1-minute focus timer has started")
    await _round_started(stack, f"call_round-{play}")
    assert _call(stack, f"call_round-{play}")["state"] == "running"
    summary = await _says(stack, "What\N{RIGHT SINGLE QUOTATION MARK}s on the whiteboard")
    assert await _answer(stack, summary) == "On the board **a house**: The board holds 6 shapes."
    assert await _answer(stack, play) == (
        f"You gave up: it was **{word}**. Round 1, score: you 0, me 1."
    )

    export = await _says(stack, "export the board")
    exported = await _answer(stack, export)
    artifacts = read_artifacts(stack.data_dir, conversation_id=CONVERSATION)
    assert [a["title"] for a in artifacts] == ["board.png", "board.svg"]
    png, svg = (a["artifact_id"] for a in artifacts)
    revision = _call(stack, f"call_export-{export}")["output"]["revision"]
    assert exported == (
        f"I exported the board (revision {revision}):\n\n"
        f"- **board.png** (`{png}`, image/png)\n- **board.svg** (`{svg}`, image/svg+xml)\n\n"
        "In the web page, **Save** under the export saves the first to your downloads;"
        " in a terminal, `lineup artifacts save ID` saves any of them,"
        f" e.g. `lineup artifacts save {png}`."
    )

    # A board.create that names another app's instance as its board gets nothing drawn there.
    steal = await _says(stack, "draw the timer")
    assert await _answer(stack, steal) == (
        "The boardgame app named a board that is not its own, so I drew nothing."
    )
    assert _state_patches(stack) == [instance]

    # Each call once; each reaction once in the chat.
    assert _calls(stack) == {
        **{method: 1 for method in (*methods, "pomodoro.start")},
        "board.create": 2,
    }
    for trigger in (house, play, summary, export):
        assert _once(stack, await _answer(stack, trigger)) == 1


async def test_the_real_sample_apps_and_a_restarted_agent_that_hears_how_a_round_ended(
    stack: Stack, tmp_path: Path, real_apps: list[SignedApp]
) -> None:
    demo = await _up(stack, tmp_path)
    for app in real_apps:
        await install_enabled(stack, app)
    await _offered(demo, "board.create", "board.summary", "board.export", "game.start_round")

    cat = await _says(stack, "Draw me a cat")
    assert await _answer(stack, cat) == (
        "I drew a cat on the whiteboard: 7 shapes on the board **a cat**."
    )
    instance = _call(stack, f"call_draw-{cat}")["output"]["instance_id"]
    assert instance.startswith("whiteboard:")
    expected_ids = [f"{cat}-{n}" for n in range(1, 8)]

    def drawn() -> dict[str, Any] | None:
        board = _board(stack, instance)
        return board if board and board.get("order") == expected_ids else None

    board = await wait_for(drawn, 30, "the cat on the whiteboard")
    assert [board["shapes"][key] for key in expected_ids] == drawing("cat")

    summary = await _says(stack, "what's on the board")
    said = await _answer(stack, summary)
    described = _call(stack, f"call_summary-{summary}")
    assert said == f"On the board **a cat**: {described['output']['description']}"
    assert described["output"]["shape_count"] == 7

    export = await _says(stack, "export the board")
    exported = await _answer(stack, export)
    references = _call(stack, f"call_export-{export}")["output"]["artifacts"]
    assert sorted(a["media_type"] for a in references) == ["image/png", "image/svg+xml"]
    for reference in references:
        assert f"**{reference['title']}** (`{reference['artifact_id']}`" in exported
    assert f"`lineup artifacts save {references[0]['artifact_id']}`" in exported

    # A round the user draws; the agent restarts while it runs, and the user stops it then.
    draw = await _says(stack, "Let's draw")
    assert await _answer(stack, draw, 2) == (
        "A round of draw-and-guess: draw the word the game shows you in 90 seconds."
    )
    round_call = f"call_round-{draw}"
    assert _call(stack, round_call)["arguments"] == {
        "mode": "user_draws",
        "word": word_for(draw),
        "seconds": 90,
    }
    await _round_started(stack, round_call)
    demo.stop()
    await demo.start()
    # The restarted agent resumes past the inventory: it kept it beside its cursor.
    again = await _says(stack, "what is on the whiteboard?")
    assert (await _answer(stack, again)).startswith("On the board **a cat**: ")
    UiSession(stack.data_dir, session_id="test").act(
        {"kind": "stop", "conversation_id": CONVERSATION, "call_id": round_call}
    )
    stopped = "The round of draw-and-guess was stopped before its end."
    assert await _answer(stack, draw) == stopped
    assert _once(stack, stopped) == 1
    assert _calls(stack) == {
        "board.create": 1,
        "board.summary": 2,
        "board.export": 1,
        "game.start_round": 1,
    }


async def test_the_first_message_of_a_new_conversation_finds_the_tools_installed_before_it(
    stack: Stack, tmp_path: Path, bundles: tuple[SignedApp, SignedApp]
) -> None:
    """The agent acts on what it was last told from a conversation's first message on: the
    runtime's inventory for conversations not yet begun lists what was enabled before."""
    await stack.start_appserver()
    await stack.start_runtime()
    demo = Demo(stack, tmp_path / "demo")
    client = await demo.start()
    pomodoro, boardgame = bundles
    await install_enabled(stack, pomodoro)
    await install_enabled(stack, boardgame)
    fresh = "conv-first"

    def held() -> bool:
        inventory = client.inventory(fresh)
        return inventory is not None and "board.create" in {t.method for t in inventory.tools}

    await wait_for(held, 30, "board.create in the inventory for new conversations")
    global_revision = {row["conversation_id"]: row for row in read_inventories(stack.data_dir)}[
        "runtime:global"
    ]["revision"]

    stack.user_says("draw a house", fresh)

    def answered() -> str | None:
        said = [i for i in stack.timeline(fresh) if i["sender"].startswith("agent:")]
        return str(said[0]["text"]) if said else None

    assert await wait_for(answered, 30, "the agent's answer") == (
        "I drew a house on the whiteboard: 6 shapes on the board **a house**."
    )
    (call,) = read_tool_calls(stack.data_dir)
    assert (call["conversation_id"], call["state"]) == (fresh, "succeeded")
    # The conversation took the revision the agent held: nothing was refused as stale.
    rows = {row["conversation_id"]: row for row in read_inventories(stack.data_dir)}
    assert rows[fresh]["revision"] == global_revision


def test_record_me_asks_the_voice_app_and_says_what_came_of_it() -> None:
    """What a user types for a recording, and what the agent says of the call's final (the
    recording itself is the voice app's test, in a real browser)."""
    for said in ("record me", "Record my voice.", "let me record"):
        assert intent_of(said) == ("record", "")
    assert intent_of("record the board") is None
    reference = {"artifact_id": "art_x", "title": "Recording of 4 s", "media_type": "audio/webm"}
    heard = {"artifact": reference, "duration_ms": 3_600, "stopped": "user"}
    assert _recorded(heard) == "I got your recording: 4 s, **Recording of 4 s**."
    assert _recorded({**heard, "transcript": "focus twenty five"}) == (
        "I got your recording: 4 s, **Recording of 4 s**. You said: “focus twenty five”."
    )
    assert _recorded({**heard, "transcript": ""}).endswith("I could not make out any words in it.")
