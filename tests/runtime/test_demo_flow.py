"""The demo agent's script end to end through `lineup run --headless` (embedded AppServer
and demo agent): the user writes, the agent answers with Markdown, a task and a choice;
the user answers the choice, the confirm and the input as UI actions through the host
actor (kind `answer`, as `lineup chat send` and the terminal chat do), and
each of the agent's reactions arrives in the chat timeline once, in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from actors.store import read_lifecycle
from apps.chat import history
from lineup.ui_session import UiSession

from .helpers import wait_for
from .test_lineup_run import _start, _stop

CONVERSATION = "conv-demo"


def _input(data_dir: Path, body: dict[str, Any]) -> None:
    UiSession(data_dir, session_id="test").act({"conversation_id": CONVERSATION, **body})


def _view(data_dir: Path) -> dict[str, Any]:
    return history(data_dir, CONVERSATION)


async def _asked(data_dir: Path, prefix: str) -> dict[str, Any]:
    """The pending interaction whose id starts with `prefix`, once it is shown."""

    def pending() -> dict[str, Any] | None:
        for request in _view(data_dir)["pending_interactions"]:
            if request["interaction_id"].startswith(prefix):
                return dict(request)
        return None

    return await wait_for(pending, 30, f"the agent to ask {prefix}")


async def _said(data_dir: Path, text: str) -> None:
    def shown() -> bool:
        return any(item["text"] == text for item in _view(data_dir)["timeline"])

    await wait_for(shown, 30, f"the agent to say {text!r}")


async def test_demo_agent_choice_confirm_input_through_the_chat(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process = _start(data_dir, tmp_path / "run.log")
    try:

        def online() -> bool:
            assert process.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            record = read_lifecycle(data_dir) if (data_dir / "runtime.db").exists() else None
            return record is not None and record["state"] == "online"

        await wait_for(online, 30, "the runtime to be online")
        _input(data_dir, {"kind": "send", "text": "ask me something"})

        colour = await _asked(data_dir, "colour.")
        assert colour["kind"] == "choice"
        assert [option["id"] for option in colour["options"]] == ["red", "green", "blue"]
        _input(data_dir, {"kind": "answer", "interaction_id": colour["interaction_id"],
                          "selected": ["green"]})  # fmt: skip
        await _said(data_dir, "You picked **Green**.")

        create = await _asked(data_dir, "create.")
        assert create["kind"] == "confirm"
        _input(data_dir, {"kind": "answer", "interaction_id": create["interaction_id"],
                          "confirmed": True})  # fmt: skip
        await _said(data_dir, "Great, let's do it.")

        name = await _asked(data_dir, "name.")
        assert name["kind"] == "input"
        _input(data_dir, {"kind": "answer", "interaction_id": name["interaction_id"],
                          "text": "Sprint 12"})  # fmt: skip
        await _said(data_dir, "Done: the green board **Sprint 12** is ready.")

        def settled() -> dict[str, Any] | None:
            view = _view(data_dir)
            mine = [item for item in view["timeline"] if item["sender"] == "user"]
            return view if mine and all(i["state"] == "accepted" for i in mine) else None

        view = await wait_for(settled, 30, "the user's messages to be accepted")
    finally:
        _stop(process)

    assert view["pending_interactions"] == []
    timeline = view["timeline"]
    assert len({item["id"] for item in timeline}) == len(timeline)  # each once
    assert [(item["sender"], item["text"]) for item in timeline if item["sender"] == "user"] == [
        ("user", "ask me something"),
        ("user", "chose green"),
        ("user", "confirmed"),
        ("user", "Sprint 12"),
    ]
    agent_texts = [item["text"] for item in timeline if item["sender"] != "user"]
    expected_order = [
        "Which colour should the board be?",
        "You picked **Green**.",
        "Shall I create a green board now?",
        "Great, let's do it.",
        "What should the board be called?",
        "Done: the green board **Sprint 12** is ready.",
    ]
    positions = [agent_texts.index(text) for text in expected_order]
    assert positions == sorted(positions), agent_texts
    assert [item["state"] for item in timeline if item["kind"] == "interaction"] == ["answered"] * 3
    (task,) = view["tasks"].values()
    assert task["status"] == "succeeded"
    assert task["percent"] == 100
