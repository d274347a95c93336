"""Backpressure: a stalled actor's backlog costs disk, not the supervisor's memory.

A producer floods an actor that never finishes its first handler. Only its window of
deliveries is in flight; the rest waits in the mailbox file, and the producer's sends
are slowed by the supervisor's bounded intake, so the supervisor's resident memory stays
flat. When the actor resumes, everything drains, each message once, in order.
"""

from __future__ import annotations

from pathlib import Path

from .conftest import MakeRuntime
from .helpers import (
    assert_exactly_once_in_order,
    child,
    recorded,
    recorded_count,
    rss_kib,
    wait_until,
)

QUEUED = 100_000
WINDOW = 100
RSS_LIMIT_MIB = 150
GROWTH_LIMIT_MIB = 40  # 100,000 frames held in memory would be ~100 MiB more


def test_stalled_actor_with_100k_queued_keeps_supervisor_memory_bounded(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    db, resume = tmp_path / "sink.db", tmp_path / "resume"
    sink = {"db": str(db), "resume_file": str(resume), "synchronous": "NORMAL"}
    config = {
        "children": [
            child("p1", "Producer"),
            child("sink", "Stalled", window=WINDOW, config=sink),
        ],
        "synchronous": "NORMAL",  # the bound is about memory; spare the disk 100k fsyncs
    }
    rt = make_runtime(config).start()
    start_kib = peak_kib = rss_kib(rt.pid)

    def sample() -> dict[str, dict[str, int]]:
        nonlocal peak_kib
        peak_kib = max(peak_kib, rss_kib(rt.pid))
        return rt.actors()

    rt.send("p1", "produce", {"to": "sink", "start": 0, "count": QUEUED})

    def all_queued() -> bool:
        actors = sample()
        producer_done = actors["p1"]["pending"] == actors["p1"]["inflight"] == 0
        return producer_done and actors["sink"]["pending"] + actors["sink"]["inflight"] == QUEUED

    wait_until(all_queued, 60, f"{QUEUED} messages queued", interval=0.1)
    sink_record = sample()["sink"]
    assert sink_record["inflight"] == WINDOW, "more than the window is in flight"
    assert sink_record["pending"] == QUEUED - WINDOW
    assert recorded_count(db) == 0, "the stalled actor applied something"
    assert peak_kib < RSS_LIMIT_MIB * 1024, f"supervisor RSS peaked at {peak_kib // 1024} MiB"
    assert (peak_kib - start_kib) < GROWTH_LIMIT_MIB * 1024, (
        f"supervisor RSS grew {(peak_kib - start_kib) // 1024} MiB while the backlog built"
    )

    resume.touch()

    def drained() -> bool:
        sample()
        return recorded_count(db) == QUEUED

    wait_until(drained, 60, "the backlog to drain", interval=0.1)
    rt.wait_drained("sink", 10)
    assert_exactly_once_in_order(recorded(db), {"p1": QUEUED})
    assert peak_kib < RSS_LIMIT_MIB * 1024, f"supervisor RSS peaked at {peak_kib // 1024} MiB"
