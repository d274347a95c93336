"""An app's own view keeps a long conversation's newest items only: what it drops is
settled, what is still open stays whatever its age, and a fold of the same log gives the
same view (what a restarted app rebuilds). The page's fold keeps everything."""

from __future__ import annotations

from typing import Any

from apps.sdk import ConversationView, ViewModel
from apps.sdk._view import KEPT_ITEMS

CONVERSATION = "c"


def _agent(message_id: str, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
    body = {"id": message_id, "type": type_, "conversation_id": CONVERSATION,
            "sender": {"kind": "agent", "id": "demo"}, "payload": payload}  # fmt: skip
    return {"kind": "agent", "conversation_id": CONVERSATION, "body": body, "state": "received"}


def _tool(call_id: str, state: str) -> dict[str, Any]:
    step = {"call_id": call_id, "state": state, "method": "board.draw", "app_scope": "board"}
    return {"kind": "tool", "conversation_id": CONVERSATION, "body": step}


def _send(action_id: str, state: str) -> dict[str, Any]:
    action = {"id": action_id, "action": "send_text", "conversation_id": CONVERSATION,
              "text": "hi"}  # fmt: skip
    return {"kind": "action", "conversation_id": CONVERSATION, "body": action, "state": state}


def _long_log(messages: int) -> list[dict[str, Any]]:
    """Open things first (a question, a call running, a message waiting for its verdict,
    a task running), then a long settled conversation with a finished call each ten."""
    log = [
        _agent("Q1", "lineup.interaction.request",
               {"interaction_id": "q1", "kind": "confirm", "prompt": "Ship it?"}),
        _tool("call-open", "running"),
        _send("A-open", "pending"),
        _agent("T1", "lineup.task.progress", {"task_id": "export", "status": "running"}),
    ]  # fmt: skip
    for n in range(messages):
        log.append(_agent(f"M{n}", "lineup.message", {"text": f"message {n}"}))
        if n % 10 == 0:
            log += [_tool(f"call-{n}", "running"), _tool(f"call-{n}", "succeeded")]
    return log


def test_a_long_conversation_keeps_its_newest_items_and_everything_open() -> None:
    views = ViewModel()
    for event in _long_log(5_000):
        view = views.apply(event)

    assert len(view.timeline) <= KEPT_ITEMS + KEPT_ITEMS // 4 + 3
    assert len(view.tasks) <= KEPT_ITEMS + KEPT_ITEMS // 4 + 2
    ids = [item["id"] for item in view.timeline]
    assert ids[:3] == ["Q1", "call-open", "A-open"]  # open, and kept however old
    assert ids[-1] == "M4999" and "M0" not in ids
    assert {"call-open", "export"} <= set(view.tasks)
    # The newest are all there, in order.
    shown = [i for i in ids if i.startswith("M")]
    assert shown == [f"M{n}" for n in range(5_000 - len(shown), 5_000)]

    # What is open still changes: the question is withdrawn, the call ends, the verdict comes.
    withdraw = _agent("W1", "lineup.interaction.withdraw", {"interaction_id": "q1"})
    assert view.withdraw_refusal(withdraw["body"]) is None
    views.apply(withdraw)
    views.apply(_tool("call-open", "succeeded"))
    views.apply(_send("A-open", "accepted"))
    states = {item["id"]: item["state"] for item in view.timeline}
    assert (states["Q1"], states["call-open"], states["A-open"]) == (
        "withdrawn", "succeeded", "accepted",
    )  # fmt: skip


def test_the_same_log_folds_to_the_same_view_and_the_page_keeps_everything() -> None:
    log = _long_log(2_000)
    first, again = ViewModel(), ViewModel()
    for event in log:
        first.apply(event)
    for event in log:
        again.apply(event)
    assert (
        first.conversations[CONVERSATION].to_dict() == again.conversations[CONVERSATION].to_dict()
    )

    page = ConversationView(CONVERSATION)  # the web host's fold: no bound
    for event in log:
        page.apply(event)
    assert len(page.timeline) == 3 + 2_000 + 200


def test_a_calls_passing_step_after_its_final_changes_nothing() -> None:
    """A replayed step of a call can come after its final (the tool router sends a passing
    step again when its cause comes again): the item and the task stay ended."""
    views = ViewModel()
    views.apply(_tool("call-1", "succeeded"))
    view = views.apply(_tool("call-1", "running"))
    assert [item["state"] for item in view.timeline] == ["succeeded"]
    assert view.tasks["call-1"]["status"] == "succeeded"
