"""The tool router's file is bounded: a finished call and its deadline operation go a week
after their last change, or once `FINISHED_KEPT` calls finished after it; a call still open
stays whatever its age; its WAL stays near a mebibyte."""

import sqlite3
import time
from pathlib import Path

from actors.kernel._own_file import WAL_KEPT_BYTES, WAL_PAGES
from actors.tool_router._db import open_db
from actors.tool_router._steps import FINISHED_KEPT, FINISHED_KEPT_MS, Steps


async def _unused(*_: object) -> None:
    raise AssertionError("pruning sends nothing")


def _not_abandoned() -> None:
    raise AssertionError("pruning abandons no step")


def _due_steps(db: sqlite3.Connection, tmp_path: Path, started_ms: int) -> Steps:
    steps = Steps(
        db,
        tmp_path,
        synchronous="NORMAL",
        send=_unused,
        abandoned=_not_abandoned,
        stepped=lambda: None,
    )
    steps.started_ms = started_ms  # this incarnation has run long enough to prune
    steps.pruned_at = time.monotonic() - 3600  # and is due
    return steps


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
    steps = _due_steps(db, tmp_path, old)

    db.execute("BEGIN IMMEDIATE")
    steps._prune()
    db.execute("COMMIT")

    kept = {row[0] for row in db.execute("SELECT call_id FROM tool_calls")}
    assert kept == {"old-open", "new-done"}
    operations = {row[0] for row in db.execute("SELECT call_id FROM tool_deadlines")}
    assert operations == {"old-open"}
    db.close()


def test_only_the_newest_thousand_finished_calls_stay(tmp_path: Path) -> None:
    """Past `FINISHED_KEPT` finished calls the oldest go, young as they are, with their
    deadline operations; an older call still open stays."""
    db = open_db(tmp_path, synchronous="NORMAL")
    now = int(time.time() * 1000)
    extra = 7
    finished = [(f"done-{i}", "succeeded", now - 100_000 + i) for i in range(FINISHED_KEPT + extra)]
    calls = [("open", "running", now - 200_000), *finished]
    db.executemany(
        "INSERT INTO tool_calls (call_id, state, created_ms, updated_ms) VALUES (?, ?, ?, ?)",
        [(call_id, state, at, at) for call_id, state, at in calls],
    )
    db.executemany(
        "INSERT INTO tool_deadlines (call_id, state) VALUES (?, ?)",
        [("done-0", "finished"), (f"done-{extra}", "finished")],
    )
    steps = _due_steps(db, tmp_path, now - 3_600_000)

    db.execute("BEGIN IMMEDIATE")
    steps._prune()
    db.execute("COMMIT")

    kept = {row[0] for row in db.execute("SELECT call_id FROM tool_calls")}
    assert kept == {"open"} | {f"done-{i}" for i in range(extra, FINISHED_KEPT + extra)}
    operations = {row[0] for row in db.execute("SELECT call_id FROM tool_deadlines")}
    assert operations == {f"done-{extra}"}
    db.close()


def test_the_wal_stays_near_a_mebibyte(tmp_path: Path) -> None:
    """Steps written past several MiB leave a WAL of about `WAL_KEPT_BYTES`, not 4 MiB."""
    db = open_db(tmp_path, synchronous="NORMAL")
    outputs = b"x" * 2000
    for n in range(3000):  # about 6 MiB of steps, each its own transaction
        db.execute(
            "INSERT INTO tool_steps (cause, seq, at_ms, outputs) VALUES (?, ?, 0, ?)",
            (f"m{n}", n, outputs),
        )
    wal = tmp_path / "tool_router.db-wal"
    assert wal.stat().st_size <= WAL_PAGES * 4096 * 1.2 + WAL_KEPT_BYTES
    db.close()
