"""An app's log keeps the kernel ids it applied only as long as they can come again: the
newest `applied_kept` (far more than the deliveries the kernel keeps in flight to an app).
A redelivery of a recent one still adds nothing; the messages themselves are all kept."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from actors.kernel._own_file import WAL_KEPT_BYTES, WAL_PAGES
from apps.sdk import EventLog
from apps.sdk._log import APPLIED_KEPT, FINISHED_CALLS_KEPT, PRUNE_EVERY

KEPT = 50


def _message(n: int) -> dict[str, object]:
    return {"id": f"m{n}", "type": "lineup.message", "conversation_id": "main",
            "sender": {"kind": "agent", "id": "demo"}, "payload": {"text": str(n)}}  # fmt: skip


def _applied(folder: Path) -> int:
    with closing(sqlite3.connect(folder / "app.db")) as db:
        return int(db.execute("SELECT count(*) FROM lineup_applied").fetchone()[0])


def test_the_applied_ids_are_bounded_and_the_recent_ones_still_hold(tmp_path: Path) -> None:
    assert APPLIED_KEPT >= 4 * 2048  # well past the kernel's credit window of 2,048
    log = EventLog(tmp_path, applied_kept=KEPT)
    for n in range(KEPT * 6):
        assert len(log.add_agent_messages(f"k{n}", [_message(n)])) == 1
    assert _applied(tmp_path) <= KEPT + KEPT // 10
    # The newest delivery again: found applied, nothing added.
    assert log.add_agent_messages(f"k{KEPT * 6 - 1}", [_message(10**6)]) == []
    # The oldest id is forgotten; its message, kept by its own id, is not stored twice.
    assert log.add_agent_messages("k0", [_message(0)]) == []
    assert log.db.execute("SELECT count(*) FROM events").fetchone()[0] == KEPT * 6
    log.close()


def test_ids_applied_before_their_order_was_kept_are_let_go_too(tmp_path: Path) -> None:
    log = EventLog(tmp_path, applied_kept=KEPT)
    log.db.execute("DROP TABLE applied_order")  # a log from before the bound
    for n in range(KEPT):
        log.db.execute("INSERT INTO lineup_applied (id) VALUES (?)", (f"old{n}",))
    log.close()
    log = EventLog(tmp_path, applied_kept=KEPT)
    for n in range(KEPT * 3):
        log.add_agent_messages(f"k{n}", [_message(n)])
    with closing(sqlite3.connect(tmp_path / "app.db")) as db:
        left = db.execute("SELECT count(*) FROM lineup_applied WHERE id LIKE 'old%'").fetchone()
    assert left == (0,)
    log.close()


def test_the_finished_tool_calls_are_bounded_and_open_ones_stay(tmp_path: Path) -> None:
    """Finished calls past the newest `keep` or older than the window go; a call still
    running stays whatever its age."""
    log = EventLog(tmp_path)
    rows = [("open", "running", 1), *[(f"done-{n}", "finished", 10 + n) for n in range(12)]]
    log.db.executemany(
        "INSERT INTO tool_calls (call_id, method, invoke_id, body, state, reports, updated_ns)"
        " VALUES (?, 'm', 'k', '{}', ?, 0, ?)",
        rows,
    )
    log.prune_tool_calls(before_ns=12, keep=5)  # done-0 and done-1 are past the window too
    kept = {row[0] for row in log.db.execute("SELECT call_id FROM tool_calls")}
    assert kept == {"open"} | {f"done-{n}" for n in range(7, 12)}
    log.close()


def test_the_logs_wal_stays_near_a_mebibyte(tmp_path: Path) -> None:
    """Written past several MiB, an app's log leaves a WAL of about `WAL_KEPT_BYTES` (it
    is copied back every `WAL_PAGES` pages and cut when it starts over), not SQLite's 4 MiB."""
    log = EventLog(tmp_path)
    text = "x" * 2000
    for n in range(3000):  # about 6 MiB of messages, each its own transaction
        log.add_agent_messages(f"k{n}", [{**_message(n), "payload": {"text": text}}])
    wal = tmp_path / "app.db-wal"
    assert wal.stat().st_size <= WAL_PAGES * 4096 * 1.2 + WAL_KEPT_BYTES
    assert wal.stat().st_size < 2 * 1024 * 1024
    assert log.db.execute("SELECT count(*) FROM events").fetchone()[0] == 3000
    log.close()


def test_finishing_calls_keeps_the_newest_finished_as_the_app_runs(tmp_path: Path) -> None:
    """Every `PRUNE_EVERY` calls finished, those past the newest `FINISHED_CALLS_KEPT` go,
    without waiting for the app's next start; a running call stays."""
    log = EventLog(tmp_path)
    log.add_tool_call("k-open", {"call_id": "open", "method": "m"})
    total = FINISHED_CALLS_KEPT + 3 * PRUNE_EVERY
    for n in range(total):
        log.add_tool_call(f"k{n}", {"call_id": f"c{n}", "method": "m"})
        assert log.finish_tool_call(f"c{n}", "{}") == 0
    kept = [row["call_id"] for row in log.tool_calls()]
    assert kept == ["open"] + [f"c{n}" for n in range(total - FINISHED_CALLS_KEPT, total)]
    log.close()


def test_steps_of_tool_calls_together_are_recorded_once_each(tmp_path: Path) -> None:
    """Several steps in one message: each recorded once by its own id, whether it came
    alone before or the message comes again."""
    log = EventLog(tmp_path)

    def step(call_id: str, state: str) -> dict[str, object]:
        return {"call_id": call_id, "conversation_id": "c", "state": state}

    assert log.add_tool_events("s1", [("s1", step("call-1", "running"))])  # alone
    steps = [("s1", step("call-1", "running")), ("s2", step("call-1", "succeeded"))]
    assert log.add_tool_events("batch", steps) == [step("call-1", "succeeded")]
    assert log.add_tool_events("batch", steps) == []  # the message again
    rows = log.db.execute("SELECT id, state FROM events WHERE kind = 'tool' ORDER BY pos")
    assert rows.fetchall() == [("s1", "running"), ("s2", "succeeded")]
    log.close()
