"""The tool router's file is bounded: a finished call and its deadline operation go a week
after their last change; a call still open stays whatever its age."""

import time
from pathlib import Path

from actors.tool_router._db import open_db
from actors.tool_router._steps import FINISHED_KEPT_MS, Steps


async def _unused(*_: object) -> None:
    raise AssertionError("pruning sends nothing")


def _not_abandoned() -> None:
    raise AssertionError("pruning abandons no step")


def test_finished_calls_older_than_a_week_go_open_ones_stay(tmp_path: Path) -> None:
    db = open_db(tmp_path, synchronous="NORMAL")
    now = int(time.time() * 1000)
    old = now - FINISHED_KEPT_MS - 60_000
    calls = [
        ("old-done", "succeeded", old),
        ("old-failed", "failed", old),
        ("old-open", "running", old),
        ("new-done", "succeeded", now),
    ]
    db.executemany(
        "INSERT INTO tool_calls (call_id, state, created_ms, updated_ms) VALUES (?, ?, ?, ?)",
        [(call_id, state, at, at) for call_id, state, at in calls],
    )
    db.executemany(
        "INSERT INTO tool_deadlines (call_id, state) VALUES (?, ?)",
        [("old-done", "finished"), ("old-open", "running")],
    )
    steps = Steps(
        db,
        tmp_path,
        synchronous="NORMAL",
        send=_unused,
        abandoned=_not_abandoned,
        stepped=lambda: None,
    )
    steps.started_ms = old  # this incarnation has run long enough to prune
    steps.pruned_at = time.monotonic() - 3600  # and is due

    db.execute("BEGIN IMMEDIATE")
    steps._prune()
    db.execute("COMMIT")

    kept = {row[0] for row in db.execute("SELECT call_id FROM tool_calls")}
    assert kept == {"old-open", "new-done"}
    operations = {row[0] for row in db.execute("SELECT call_id FROM tool_deadlines")}
    assert operations == {"old-open"}
    db.close()
