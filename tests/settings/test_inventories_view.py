"""What the tool router shows of its inventories with the policy stays within its budget
however many conversations there are (an answer is one kernel frame): the most recently
published first, and a count of the rest."""

from __future__ import annotations

import json

import msgpack

from actors.tool_router._policy_edit import INVENTORIES_BUDGET, inventories_view


def _row(n: int) -> dict[str, object]:
    tools = [
        {"app_scope": "toolbox", "method": f"box.m{t}", "visible": False, "reason": "x" * 80}
        for t in range(40)
    ]
    return {
        "conversation_id": f"conv-{n:04d}",
        "agent_id": "demo",
        "revision": n,
        "visibility": tools,
        "published_ms": 1_000 + n,
        "payload": {"tools": ["not shown"]},
    }


def test_many_conversations_stay_within_the_budget() -> None:
    rows = [_row(n) for n in range(500)]
    view = inventories_view(rows)
    shown = view["inventories"]
    assert 0 < len(shown) < 500
    assert view["inventories_left_off"] == 500 - len(shown)
    assert len(msgpack.packb(view)) <= INVENTORIES_BUDGET
    # One more would not have fit.
    following = inventories_view(rows[499 - len(shown) : 499 - len(shown) + 1])["inventories"]
    assert len(json.dumps(shown + following)) > INVENTORIES_BUDGET
    # The newest kept, sorted by conversation; nothing but what the view names.
    assert [e["revision"] for e in shown] == list(range(500 - len(shown), 500))
    assert set(shown[0]) == {"conversation_id", "agent_id", "revision", "visibility"}


def test_a_few_conversations_are_all_shown() -> None:
    view = inventories_view([_row(2), _row(1)])
    assert [e["conversation_id"] for e in view["inventories"]] == ["conv-0001", "conv-0002"]
    assert view["inventories_left_off"] == 0
