"""The chaos checker reports what is planted in small histories, each fault with its count,
and a clean history as all zeros: a checker that cannot fail proves nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from actors.capability_gateway._db import GatewayFile
from bench._chaos_check import check, in_doubt_effects, read_jsonl
from bench._chaos_report import recovery_ms

CONVERSATION = "conv-1"


def agent_sent(order: int, *, event: str = "sent") -> dict[str, Any]:
    return {
        "event": event,
        "conversation": CONVERSATION,
        "message_id": f"a{order}",
        "type": "lineup.message",
        "order": order,
        "text": f"agent says {order}",
    }


def call_sent(order: int, *, event: str = "sent") -> dict[str, Any]:
    return {
        "event": event,
        "conversation": CONVERSATION,
        "message_id": f"i{order}",
        "type": "lineup.tool.invoke",
        "order": order,
        "call_id": f"call_{order}",
    }


def typed(order: int, *, event: str = "typed") -> dict[str, Any]:
    return {
        "event": event,
        "conversation": CONVERSATION,
        "text": f"user says {order}",
        "order": order,
    }


def shown(order: int, *, message_id: str | None = None) -> dict[str, Any]:
    return {"id": message_id or f"a{order}", "sender": "agent:demo", "text": f"agent says {order}"}


def held(seq: int, order: int, *, message_id: str | None = None) -> dict[str, Any]:
    return {
        "seq": seq,
        "message_id": message_id or f"u{order}",
        "type": "lineup.message",
        "sender": {"kind": "user", "id": "local"},
        "text": f"user says {order}",
    }


def final(seq: int, order: int, *, message_id: str | None = None) -> dict[str, Any]:
    return {
        "seq": seq,
        "message_id": message_id or f"r{order}",
        "type": "lineup.tool.result",
        "sender": {"kind": "runtime", "id": "tools"},
        "call_id": f"call_{order}",
    }


class History:
    """A clean run of three messages each way and two tool calls; a test plants a fault."""

    def __init__(self) -> None:
        self.agent = [agent_sent(n) for n in range(3)] + [call_sent(n) for n in range(2)]
        self.ui = [typed(n) for n in range(3)]
        self.timeline = [
            {"id": "x", "sender": "user", "text": "user says 0"},
            *(shown(n) for n in range(3)),
        ]
        self.held = [held(10 + n, n) for n in range(3)] + [final(20 + n, n) for n in range(2)]

    def check(self) -> dict[str, Any]:
        return check(
            agent=self.agent,
            ui=self.ui,
            chat={CONVERSATION: {"timeline": self.timeline}},
            appserver={CONVERSATION: {"messages": self.held}},
        )


def counts(report: dict[str, Any], part: str) -> tuple[int, ...]:
    return tuple(report[part].values())


def test_a_clean_history_reports_all_zeros() -> None:
    report = History().check()
    assert report == {
        "agent_to_user": {"sent": 3, "delivered": 3, "lost": 0, "duplicated": 0, "reordered": 0},
        "user_to_agent": {"sent": 3, "delivered": 3, "lost": 0, "duplicated": 0, "reordered": 0},
        "tool_calls": {"sent": 2, "one_final": 2, "none": 0, "several": 0},
        "in_doubt": 0,
        "failed": [],
    }


def test_a_lost_message_each_way_is_counted() -> None:
    history = History()
    history.timeline = [item for item in history.timeline if item["id"] != "a1"]
    history.held = [row for row in history.held if row["message_id"] != "u2"]
    report = history.check()
    assert counts(report, "agent_to_user") == (3, 2, 1, 0, 0)
    assert counts(report, "user_to_agent") == (3, 2, 1, 0, 0)
    assert report["failed"] == ["agent_to_user.lost", "user_to_agent.lost"]


def test_a_copy_under_a_new_id_is_a_duplicate() -> None:
    history = History()
    history.timeline.append(shown(1, message_id="a1-again"))
    history.held.append(held(30, 0, message_id="u0-again"))
    report = history.check()
    assert counts(report, "agent_to_user") == (3, 3, 0, 1, 0)
    assert counts(report, "user_to_agent") == (3, 3, 0, 1, 0)
    assert report["failed"] == ["agent_to_user.duplicated", "user_to_agent.duplicated"]


def test_a_message_received_again_under_its_own_id_is_no_duplicate() -> None:
    history = History()
    history.agent += [
        {**row, "event": "received", "conversation": CONVERSATION} for row in history.held
    ]
    assert history.check()["failed"] == []


def test_a_reordering_is_counted_per_message_that_arrived_late() -> None:
    history = History()
    first, second, third = history.timeline[1:]
    history.timeline[1:] = [second, third, first]
    history.held[0]["seq"] = 13  # the user's first text now follows the two others
    report = history.check()
    assert counts(report, "agent_to_user") == (3, 3, 0, 0, 1)
    assert counts(report, "user_to_agent") == (3, 3, 0, 0, 1)
    assert report["failed"] == ["agent_to_user.reordered", "user_to_agent.reordered"]


def test_a_call_without_a_final_and_one_with_two_are_counted() -> None:
    history = History()
    history.held = [row for row in history.held if row.get("call_id") != "call_0"]
    history.agent.append(
        {**final(40, 1, message_id="r1-again"), "event": "received", "conversation": CONVERSATION}
    )
    report = history.check()
    assert report["tool_calls"] == {"sent": 2, "one_final": 0, "none": 1, "several": 1}
    assert report["failed"] == ["tool_calls.none", "tool_calls.several"]


def test_an_unconfirmed_send_counts_only_when_someone_saw_it() -> None:
    history = History()
    history.agent += [agent_sent(3, event="unconfirmed"), call_sent(2, event="unconfirmed")]
    history.ui.append(typed(3, event="unconfirmed"))
    assert history.check()["failed"] == []  # never arrived: nothing to lose
    history.timeline.append(shown(3))
    history.held.append(held(40, 3))
    history.held.append({**final(41, 2), "type": "lineup.tool.accepted"})
    report = history.check()
    assert counts(report, "agent_to_user")[:3] == (4, 4, 0)
    assert counts(report, "user_to_agent")[:3] == (4, 4, 0)
    assert report["tool_calls"] == {"sent": 3, "one_final": 2, "none": 1, "several": 0}


def test_in_doubt_effects_are_reported_but_do_not_fail_the_run() -> None:
    history = History()
    report = check(
        agent=history.agent,
        ui=history.ui,
        chat={CONVERSATION: {"timeline": history.timeline}},
        appserver={CONVERSATION: {"messages": history.held}},
        in_doubt=["capreq-1"],
    )
    assert (report["in_doubt"], report["failed"]) == (1, [])


def test_a_record_cut_short_mid_line_keeps_its_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    path.write_text('{"event": "sent"}\n{"event": "rec', encoding="utf-8")
    assert read_jsonl(path) == [{"event": "sent"}]


def test_in_doubt_effects_are_read_from_the_gateways_record(tmp_path: Path) -> None:
    assert in_doubt_effects(tmp_path) == []  # no capability_gateway.db: none
    gateway = GatewayFile(tmp_path)
    for request_id, status in (("capreq-1", "completed"), ("capreq-2", "in_doubt")):
        row = {"request_id": request_id, "app_scope": "notes", "capability": "file.save",
               "state": "finished", "status": status, "created_ms": 1}  # fmt: skip
        gateway.write({"insert": row})
    gateway.close()
    assert in_doubt_effects(tmp_path) == ["capreq-2"]


def test_each_fault_recovers_at_the_next_delivery_after_it_by_kind() -> None:
    ms = 1_000_000
    faults = [(10 * ms, "kill_actor"), (20 * ms, "disk_full"), (25 * ms, "kill_actor")]
    faults.append((90 * ms, "kill_app"))  # after the last delivery: no recovery seen
    delivered = [5 * ms, 12 * ms, 60 * ms, 30 * ms]
    assert recovery_ms(faults, delivered) == {"kill_actor": [2.0, 5.0], "disk_full": [10.0]}
