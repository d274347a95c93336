"""Poison messages: dead after `max_deliver` failures, the rest proceeds, nothing escalates.

A poison item either raises in its handler or kills the whole actor process. Either way it
must end in the dead letters with its error after exactly `max_deliver` failures, without
taking any innocent message with it (acks are batched, so the kernel must find out which
delivery really crashed), without exhausting the restart intensity (`max_restarts=2` would
escalate at the third counted restart), and a caller awaiting a reply to a poison request
gets a definite `CallFailed("dead_letter")`. A dead letter can be redriven.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import MakeRuntime
from .helpers import child, outcomes, per_sender, recorded, wait_until

POISON = 50
COUNT = 100


@pytest.mark.parametrize("mode", ["raise", "crash"])
def test_poison_message_goes_dead_and_the_rest_proceeds(
    make_runtime: MakeRuntime, tmp_path: Path, mode: str
) -> None:
    db, calls_db, cure = tmp_path / "rec.db", tmp_path / "caller.db", tmp_path / "cured"
    recorder_config = {"db": str(db), "poison": POISON, "poison_mode": mode, "cure_file": str(cure)}
    config = {
        "children": [
            child("p1", "Producer"),
            child("caller", "Caller", config={"db": str(calls_db)}),
            child("rec", "Recorder", max_deliver=3, config=recorder_config),
        ],
        "max_restarts": 2,
        "max_seconds": 60,
    }
    rt = make_runtime(config).start()
    rt.send("p1", "produce", {"to": "rec", "start": 0, "count": COUNT})
    rt.send(
        "caller",
        "do_call",
        {"to": "rec", "type": "item", "body": {"n": POISON, "sender": "caller"}, "key": "poison"},
    )

    def settled() -> bool:
        rec = rt.actors()["rec"]
        return bool(rec["dead"] == 2 and rec["pending"] == 0 and rec["inflight"] == 0)

    wait_until(settled, 60, "both poison items to be dead and the rest applied")
    expected_error = f"RuntimeError: poison item {POISON}" if mode == "raise" else "status 3"
    dead = rt.mailbox("rec", dead=True)
    assert sorted(m["body"]["sender"] for m in dead) == ["caller", "p1"]
    for message in dead:
        assert message["state"] == "dead"
        assert message["body"]["n"] == POISON
        assert message["failures"] == 3
        assert expected_error in message["error"]

    # every other item was applied once, in order; nothing innocent died
    items = recorded(db)
    assert per_sender(items) == {"p1": [n for n in range(COUNT) if n != POISON]}
    assert len({i for i, _, _ in items}) == len(items)

    # the caller got a definite failure, not a timeout
    assert wait_until(lambda: outcomes(calls_db), 10, "the call's outcome")["poison"] == (
        "failed",
        None,
        "dead_letter",
    )

    # the poison alone did not exhaust the restart intensity
    rec = rt.wait_actor("rec")
    status = rt.status()
    assert (status["state"], status["degraded"]) == ("running", [])
    if mode == "crash":
        assert rec["restarts"] >= 6  # 3 crashes for each of the 2 poison items
    else:
        assert rec["restarts"] == 0  # a handler that raises does not cost a restart

    # redrive: back to pending with fresh attempts; still poison, so dead again
    request = next(m for m in dead if m["body"]["sender"] == "caller")
    request_id = request["id"]
    assert rt.control({"type": "redrive", "id": request_id}) == {"redriven": request_id}

    def dead_again() -> dict[str, Any] | None:
        again = {m["id"]: m for m in rt.mailbox("rec", dead=True)}.get(request_id)
        return again if again and again["attempts"] == request["attempts"] + 3 else None

    again = wait_until(dead_again, 30, "the redriven request to die again")
    assert (again["failures"], again["state"]) == (3, "dead")

    # redrive once the poison is cured: applied, once
    cure.touch()
    poison_id = next(m["id"] for m in dead if m["body"]["sender"] == "p1")
    assert rt.control({"type": "redrive", "id": poison_id}) == {"redriven": poison_id}
    wait_until(
        lambda: rt.actors()["rec"]["dead"] == 1 and len(recorded(db)) == COUNT,
        30,
        "the redriven item to be applied",
    )
    items = recorded(db)
    assert items[-1][0] == poison_id  # applied last, once
    assert sorted(per_sender(items)["p1"]) == list(range(COUNT))
    assert [m["body"]["sender"] for m in rt.mailbox("rec", dead=True)] == ["caller"]


def test_a_held_delivery_is_given_again_and_never_blamed(make_runtime: MakeRuntime) -> None:
    """A delivery whose handler returned `ACK_LATER` stays in flight until the actor acks
    it: a crash gives it to the next incarnation again, and is blamed on the message being
    handled, never on it."""
    rt = make_runtime({"children": [child("holder", "Holding", max_deliver=2)]}).start()
    kept = [rt.send("holder", "keep", {"n": n}) for n in range(3)]
    wait_until(lambda: rt.actors()["holder"]["inflight"] == 3, 20, "three held deliveries")
    crash = rt.send("holder", "crash")
    wait_until(lambda: rt.actors()["holder"]["dead"] == 1, 30, "the crashing message dead")
    (dead,) = rt.mailbox("holder", dead=True)
    assert (dead["id"], dead["failures"]) == (crash, 2)

    def held() -> list[dict[str, Any]] | None:
        rows = [m for m in rt.mailbox("holder") if m["id"] in kept]
        return rows if all(m["state"] == "inflight" for m in rows) else None

    wait_until(lambda: rt.actors()["holder"]["inflight"] == 3, 20, "the deliveries held again")
    rows = wait_until(held, 20, "the held deliveries in flight")
    assert [m["failures"] for m in rows] == [0, 0, 0]
    assert min(m["attempts"] for m in rows) >= 3  # given again after each crash
    rt.send("holder", "done")

    def acked() -> bool:
        return [m["id"] for m in rt.mailbox("holder")] == [crash]  # the rest are done

    wait_until(acked, 20, "the held deliveries acked")
