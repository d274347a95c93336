"""Recovery under SIGKILL: of a receiving actor, again and again, and of the supervisor.

The judge of "exactly once, in order" is never the kernel's own bookkeeping but the
recipient's SQLite file, written with `applied_once` in the same transaction as the effect.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import time
from pathlib import Path

import pytest

from .conftest import MakeRuntime
from .helpers import (
    Runtime,
    assert_exactly_once_in_order,
    child,
    pid_alive,
    recorded,
    recorded_count,
    runtime_processes,
    wait_until,
)


def _wait_running_again(rt: Runtime, name: str, old_pid: int | None) -> int:
    def running_again() -> int | None:
        record = rt.actors()[name]
        if record["state"] != "running" or record["pid"] in (None, old_pid):
            return None
        return int(record["pid"])

    return wait_until(running_again, 20, f"{name} to be running again")


def _kill_storm(
    make_runtime: MakeRuntime,
    tmp_path: Path,
    *,
    per_producer: int,
    rate: float,
    synchronous: str,
) -> None:
    """Two producers send `per_producer` items each to a recorder that is SIGKILLed every
    50-500 ms (once it runs again) until all are applied; then check its own record."""
    db = tmp_path / "rec.db"
    config = {
        "children": [
            child("p1", "Producer"),
            child("p2", "Producer"),
            child(
                "rec",
                "Recorder",
                max_deliver=1_000_000,  # a kill may land on any delivery; none is poison
                # WAL + NORMAL survives a process kill; FULL's fsync per item would make
                # the recorder, not the kernel, the bottleneck
                config={"db": str(db), "synchronous": "NORMAL"},
            ),
        ],
        "max_restarts": 1_000_000,
        "max_seconds": 1,
        "backoff_max": 0.02,
        "synchronous": synchronous,  # the mailbox's: an ack means on disk
    }
    rt = make_runtime(config).start()
    rng = random.Random(per_producer)
    for p in ("p1", "p2"):
        body = {"to": "rec", "start": 0, "count": per_producer, "rate": rate}
        rt.send(p, "produce", body)

    kills = 0
    killed_pid = None
    deadline = time.monotonic() + 150 + per_producer / 500
    while recorded_count(db) < 2 * per_producer:
        assert time.monotonic() < deadline, f"only {recorded_count(db)} applied after {kills} kills"
        pid = _wait_running_again(rt, "rec", killed_pid)
        time.sleep(rng.uniform(0.05, 0.5))  # the kill schedule, not a synchronisation
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        killed_pid = pid
        kills += 1

    rt.wait_drained("rec", 30)
    items = recorded(db)
    assert_exactly_once_in_order(items, {"p1": per_producer, "p2": per_producer})
    assert kills >= 10, f"only {kills} kills: not a storm"
    actors = rt.actors()
    assert actors["rec"]["restarts"] >= kills - 1
    assert actors["rec"]["dead"] == 0
    assert rt.status()["state"] == "running"
    # the two senders' messages were interleaved, not delivered one after the other
    senders = [s for _, s, _ in items]
    assert sum(1 for a, b in itertools.pairwise(senders) if a != b) > 1


def test_receiver_sigkilled_every_50_to_500_ms_applies_each_message_once_in_order(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    # 2 x 10,000 messages at 1,000/s each: the flow lasts about 10 s, whatever the speed
    # of the kernel, so the receiver is killed some 25 times while it flows
    _kill_storm(make_runtime, tmp_path, per_producer=10_000, rate=1000, synchronous="FULL")


@pytest.mark.soak
def test_soak_kill_storm_with_synchronous_full(make_runtime: MakeRuntime, tmp_path: Path) -> None:
    _kill_storm(make_runtime, tmp_path, per_producer=200_000, rate=2000, synchronous="FULL")


def test_kill_9_of_the_supervisor_leaves_no_actor_and_a_restart_redelivers_everything(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    db = tmp_path / "sink.db"
    count = 500
    stalled = {
        "children": [
            child("p1", "Producer"),
            child("sink", "Stalled", window=64, config={"resume_file": str(tmp_path / "never")}),
            child("frozen", "Frozen"),
        ]
    }
    rt = make_runtime(stalled).start()
    rt.send("p1", "produce", {"to": "sink", "start": 0, "count": count})
    rt.send("frozen", "freeze")  # deaf to its channel: only the parent-death signal ends it

    def queued() -> bool:
        actors = rt.actors()
        return bool(
            actors["p1"]["pending"] == actors["p1"]["inflight"] == 0
            and actors["sink"]["pending"] + actors["sink"]["inflight"] == count
        )

    wait_until(queued, 30, f"{count} messages queued for the stalled sink")
    assert rt.actors()["sink"]["inflight"] == 64  # its window; the rest waits on disk
    wait_until(lambda: rt.actors()["frozen"]["inflight"] == 1, 10, "frozen to be frozen")
    pids = rt.actor_pids()
    assert len(pids) == 3
    assert rt.process is not None
    everything = runtime_processes(rt.process)  # the actors and the zygote that forked them
    assert set(pids) < set(everything)

    killed_at = time.monotonic()
    rt.kill9()
    wait_until(
        lambda: not any(pid_alive(pid) for pid in everything), 2.0, "the actors to die with it"
    )
    assert time.monotonic() - killed_at < 2.0

    # the same data dir, the same name, now an actor that does its work
    resumed = {
        "children": [
            child("p1", "Producer"),
            child("sink", "Recorder", config={"db": str(db)}),
        ]
    }
    rt.start(config=resumed)
    wait_until(lambda: recorded_count(db) >= count, 30, "the queued messages to drain")
    rt.wait_drained("sink", 10)
    assert_exactly_once_in_order(recorded(db), {"p1": count})
    assert "mailbox open: 65 in flight handed back" in rt.log()  # the sink's 64, frozen's 1
    assert rt.actors()["p1"]["restarts"] == 0
