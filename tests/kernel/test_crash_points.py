"""Crash points: a process SIGKILLs itself at a chosen step; the final state must equal a
crash-free run's (the same item ids, each applied once, in each sender's order).

The flow: two producers each get PRODUCES `produce` messages (fixed ids, so every run
derives the same item ids) and emit ITEMS items each to one recorder, which applies them
with `applied_once` into its own SQLite file.

- `actor.after_receive`: a delivery arrived, its handler has not run (replayed later).
- `actor.after_emit`: the handler ran and emitted, the ack was not sent (replayed; the
  producers re-emit the same derived ids, which the mailbox ignores; the recorder finds
  its `applied_once` record).
- `supervisor.after_commit` / `supervisor.after_forward`: the supervisor dies (and with
  it every actor, by their parent-death signal); it is started again on the same data dir
  without the switch, and the client re-sends its produce messages (same ids: ignored).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from actors.kernel import ControlError, new_id

from .conftest import MakeRuntime
from .helpers import (
    Runtime,
    assert_exactly_once_in_order,
    child,
    per_sender,
    recorded,
    recorded_count,
    runtime_processes,
    wait_until,
)

PRODUCERS = ("p1", "p2")
PRODUCES = 45  # produce messages per producer: above the actor crash points' N
ITEMS = 5  # items per produce message
TOTAL = len(PRODUCERS) * PRODUCES * ITEMS
PRODUCE_IDS = {p: [new_id() for _ in range(PRODUCES)] for p in PRODUCERS}


def _config(db: Path) -> dict[str, Any]:
    return {
        "children": [
            *(child(p, "Producer") for p in PRODUCERS),
            child("rec", "Recorder", config={"db": str(db)}),
        ],
        "max_restarts": 1000,
        "backoff_max": 0.05,
    }


def _send_all(rt: Runtime, *, tolerate_death: bool = False) -> None:
    """The client's produce messages; re-sending them is harmless (their ids are fixed)."""
    for i in range(PRODUCES):
        for p in PRODUCERS:
            body = {"to": "rec", "start": i * ITEMS, "count": ITEMS}
            try:
                rt.send(p, "produce", body, id=PRODUCE_IDS[p][i])
            except ControlError:
                if not tolerate_death:
                    raise
                rt.wait_exit(5)  # it died at its crash point mid-request
                return


def _wait_complete(rt: Runtime, db: Path, timeout: float) -> None:
    def complete() -> bool:
        if recorded_count(db) < TOTAL:
            return False
        actors = rt.actors()
        return all(a["pending"] == a["inflight"] == 0 for a in actors.values())

    wait_until(complete, timeout, f"{TOTAL} items to be applied and every mailbox drained")


def _final_state(rt: Runtime, db: Path) -> list[tuple[str, str, int]]:
    items = recorded(db)
    assert_exactly_once_in_order(items, {p: PRODUCES * ITEMS for p in PRODUCERS})
    actors = rt.actors()
    assert {name: a["dead"] for name, a in actors.items()} == {
        name: 0 for name in (*PRODUCERS, "rec")
    }, "a message went dead"
    return items


@pytest.fixture(scope="module")
def crash_free(make_module_runtime: MakeRuntime, tmp_path_factory: pytest.TempPathFactory) -> Any:
    db = tmp_path_factory.mktemp("crash-free") / "rec.db"
    rt = make_module_runtime(_config(db), name="crash-free").start()
    _send_all(rt)
    _wait_complete(rt, db, 60)
    items = _final_state(rt, db)
    assert "restart" not in rt.log(), "the crash-free run had a crash"
    batches = rt.status()["batches"]
    rt.stop()
    return items, batches


def _same_as_crash_free(items: list[tuple[str, str, int]], crash_free: Any) -> None:
    expected, _ = crash_free
    assert {i for i, _, _ in items} == {i for i, _, _ in expected}, "different item ids"
    assert per_sender(items) == per_sender(expected)
    for sender in PRODUCERS:  # the same ids in the same per-sender order
        assert [i for i, s, _ in items if s == sender] == [i for i, s, _ in expected if s == sender]


@pytest.mark.parametrize("point", ["actor.after_receive", "actor.after_emit"])
def test_actor_crash_point(
    make_runtime: MakeRuntime, tmp_path: Path, crash_free: Any, point: str
) -> None:
    db = tmp_path / "rec.db"
    rt = make_runtime(_config(db)).start(env={"LINEUP_CRASH": f"{point}@40"})
    _send_all(rt)
    _wait_complete(rt, db, 90)
    _same_as_crash_free(_final_state(rt, db), crash_free)
    actors = rt.actors()
    # the recorder crashed again and again; each producer at its 40th produce message
    assert actors["rec"]["restarts"] >= TOTAL // 40 - 1
    assert actors["rec"]["last_exit"] == "killed by SIGKILL"
    for p in PRODUCERS:
        assert actors[p]["restarts"] >= 1, f"{p} never hit the crash point"


@pytest.mark.parametrize(
    ("point", "nth"), [("supervisor.after_commit", 40), ("supervisor.after_forward", 4)]
)
def test_supervisor_crash_point(
    make_runtime: MakeRuntime, tmp_path: Path, crash_free: Any, point: str, nth: int
) -> None:
    db = tmp_path / "rec.db"
    rt = make_runtime(_config(db)).start(env={"LINEUP_CRASH": f"{point}@{nth}"})
    first = rt.process
    assert first is not None
    _send_all(rt, tolerate_death=True)
    assert rt.wait_exit(30) == -9, "the supervisor did not die at its crash point"
    assert recorded_count(db) < TOTAL, "the crash came after the work was done"
    wait_until(lambda: not runtime_processes(first), 2.0, "the actors to die with it")

    rt.start()  # same data dir, no crash switch
    _send_all(rt)  # the client retries everything it is not sure of
    _wait_complete(rt, db, 60)
    _same_as_crash_free(_final_state(rt, db), crash_free)
    assert "in flight handed back" in rt.log()


def test_messages_born_outside_keep_their_ids(make_runtime: MakeRuntime, tmp_path: Path) -> None:
    """An outside identity (an idempotency key) is a message id; what it causes is derived
    from it, and a retry with the same key changes nothing."""
    db = tmp_path / "rec.db"
    rt = make_runtime(_config(db)).start()
    body = {"to": "rec", "start": 0, "count": 5}
    for _ in range(2):
        assert rt.send("p1", "produce", body, id="order-42:retry.1") == "order-42:retry.1"
    wait_until(lambda: recorded_count(db) == 5, 20, "the 5 items")
    rt.wait_drained("p1", 10)
    rt.wait_drained("rec", 10)
    assert per_sender(recorded(db)) == {"p1": [0, 1, 2, 3, 4]}
    assert rt.actors()["p1"]["dead"] == 0
    with contextlib.suppress(ControlError):
        rt.send("p1", "produce", body, id="order-42:retry.1")
    rt.wait_drained("p1", 10)
    assert recorded_count(db) == 5
