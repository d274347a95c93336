"""The chat's view of a question the agent withdraws, folded from its log as the SDK folds
it: only the agent that asked closes it, never another agent or a consent card; a late
answer is shown refused with its sentence and closes nothing; the terminal chat and the
page show the question as no longer asked."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from actors.web_host._views import display_item
from apps.sdk import ViewModel
from contracts import Code
from lineup.terminal_chat import parse_line, render_new

CONVERSATION = "c"


def _agent(message_id: str, type_: str, payload: dict[str, Any], agent: str = "demo") -> Any:
    body = {"id": message_id, "type": type_, "conversation_id": CONVERSATION,
            "sender": {"kind": "agent", "id": agent}, "payload": payload}  # fmt: skip
    return {"kind": "agent", "conversation_id": CONVERSATION, "body": body, "state": "received"}


def _ask(message_id: str, interaction_id: str, agent: str = "demo") -> Any:
    payload = {"interaction_id": interaction_id, "kind": "confirm", "prompt": "Ship it?"}
    return _agent(message_id, "lineup.interaction.request", payload, agent)


def _withdraw(message_id: str, interaction_id: str, agent: str = "demo") -> dict[str, Any]:
    payload = {"interaction_id": interaction_id, "reason": "the conversation moved on"}
    return dict(_agent(message_id, "lineup.interaction.withdraw", payload, agent)["body"])


def _card(request_id: str) -> dict[str, Any]:
    card = {"request_id": request_id, "state": "asking", "conversation_id": CONVERSATION,
            "app_scope": "keeper", "capability": "file.save", "purpose": "keep it"}  # fmt: skip
    return {"kind": "consent", "conversation_id": CONVERSATION, "body": card}


def test_only_the_asking_agent_withdraws_an_open_question_and_only_once() -> None:
    views = ViewModel()
    views.apply(_ask("M1", "ship"))
    view = views.apply(_card("keeper/r1"))
    # Another agent, a consent card (the runtime's question), a question never asked.
    assert view.withdraw_refusal(_withdraw("W0", "ship", agent="other")) == "interaction_not_found"
    assert view.withdraw_refusal(_withdraw("W0", "keeper/r1")) == "interaction_not_found"
    assert view.withdraw_refusal(_withdraw("W0", "nope")) == "interaction_not_found"
    views.apply({**_agent("W9", "x", {}), "body": _withdraw("W9", "keeper/r1")})
    assert sorted(view.pending_interactions) == ["keeper/r1", "ship"]

    assert view.withdraw_refusal(_withdraw("W1", "ship")) is None
    views.apply({**_agent("W1", "x", {}), "body": _withdraw("W1", "ship")})
    assert sorted(view.pending_interactions) == ["keeper/r1"]
    (asked,) = [item for item in view.timeline if item["id"] == "M1"]
    assert (asked["state"], asked["reason"]) == ("withdrawn", "the conversation moved on")
    assert view.withdraw_refusal(_withdraw("W2", "ship")) == "interaction_closed"
    # The codes are the contracts' own.
    assert {Code("interaction_not_found"), Code("interaction_closed")} <= set(Code)


def test_a_late_answer_is_shown_refused_and_the_question_stays_withdrawn() -> None:
    views = ViewModel()
    views.apply(_ask("M1", "ship"))
    views.apply({**_agent("W1", "x", {}), "body": _withdraw("W1", "ship")})
    response = {"interaction_id": "ship", "kind": "confirm", "confirmed": True}
    late = {"id": "A1", "action": "answer", "conversation_id": CONVERSATION, "response": response}
    event = {"kind": "action", "conversation_id": CONVERSATION, "body": late,
             "state": "refused", "code": "withdrawn"}  # fmt: skip
    view = views.apply(event).to_dict()
    asked, answer = view["timeline"]
    assert asked["state"] == "withdrawn" and "answer" not in asked
    assert (answer["text"], answer["state"]) == ("confirmed", "refused")
    assert answer["code"] == "withdrawn"

    # The terminal chat: nothing open to answer, the question named as withdrawn, the
    # refusal said in a sentence.
    assert parse_line("/yes", view, CONVERSATION) == "no question is waiting for an answer"
    assert parse_line("/q1 yes", view, CONVERSATION) == (
        "q1 is no longer asked: the agent withdrew it"
    )
    shown = [line.plain for line in render_new(view, {}) if isinstance(line, Text)]
    assert shown[-1] == (
        "  ↳ The agent no longer asks this question, so the answer was not sent:"
        " reply in a message instead."
    )
    # The page: a closed card that says why, and the refusal's sentence under the answer.
    card = display_item(asked, 0, set())["ask"]
    assert (card["open"], card["withdrawn"], card["reason"]) == (
        False,
        True,
        "the conversation moved on",
    )
    assert display_item(answer, 1, set())["detail"].startswith("The agent no longer asks")
