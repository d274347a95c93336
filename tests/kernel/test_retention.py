"""How long the mailbox keeps done messages: a dedup window, pruned while the runtime runs,
not only at its start, so that a runtime that runs for weeks does not grow without bound."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

from actors.kernel.supervising._log_bound import bound_logs

from .conftest import MakeRuntime
from .helpers import assert_exactly_once_in_order, child, recorded, recorded_count, wait_until


def _rows_for(data_dir: Path, recipient: str) -> int:
    uri = f"file:{data_dir / 'mailbox.db'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=10)) as db:
        row = db.execute("SELECT count(*) FROM messages WHERE recipient = ?", (recipient,))
        return int(row.fetchone()[0])


def test_done_messages_past_the_window_are_pruned_while_the_runtime_runs(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    db = tmp_path / "rec.db"
    config = {
        "children": [
            child("p", "Producer"),
            child("rec", "Recorder", config={"db": str(db), "synchronous": "NORMAL"}),
        ],
        "dedup_window_s": 1.0,
        "prune_every_s": 0.2,
    }
    rt = make_runtime(config).start()
    rt.send("p", "produce", {"to": "rec", "start": 0, "count": 40})
    wait_until(lambda: recorded_count(db) == 40, 30, "the first 40 items applied")
    wait_until(lambda: _rows_for(rt.data_dir, "rec") == 0, 30, "the done items pruned")
    assert rt.status()["state"] == "running"
    # Pruned rows do not bring their seqs back: later messages still arrive, once, in order.
    rt.send("p", "produce", {"to": "rec", "start": 40, "count": 10})
    wait_until(lambda: recorded_count(db) == 50, 30, "the next 10 items applied")
    assert_exactly_once_in_order(recorded(db), {"p": 50})


def test_the_size_cap_bounds_the_done_messages_with_a_warning(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    """A day-long window but a cap of 100 done messages: 600 messages leave at most the
    cap (plus what came since the last prune), each applied once, and the supervisor's log
    says the window was shortened and what to do."""
    db = tmp_path / "rec.db"
    config = {
        "children": [
            child("p", "Producer"),
            child("rec", "Recorder", config={"db": str(db), "synchronous": "NORMAL"}),
        ],
        "dedup_max_rows": 100,
    }
    rt = make_runtime(config).start()
    for start in range(0, 600, 100):
        rt.send("p", "produce", {"to": "rec", "start": start, "count": 100})
        wait_until(lambda s=start: recorded_count(db) == s + 100, 30, "a hundred more applied")
    wait_until(lambda: _rows_for(rt.data_dir, "rec") <= 150, 30, "the done rows capped")
    wait_until(lambda: "its dedup window is" in rt.log_path.read_text(), 10, "the cap's warning")
    assert "raise `dedup_max_rows`" in rt.log_path.read_text()
    assert_exactly_once_in_order(recorded(db), {"p": 600})


def test_logs_are_turned_over_past_their_cap_and_old_ones_go(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    big, small, gone = logs / "busy.log", logs / "quiet.log", logs / "removed-app.log"
    big.write_bytes(b"x" * 3000)
    (logs / "busy.log.1").write_bytes(b"y" * 2500)
    small.write_bytes(b"z" * 10)
    gone.write_bytes(b"w" * 100)
    month_ago = time.time() - 31 * 86400
    os.utime(gone, (month_ago, month_ago))
    with open(big, "ab") as writer:  # the actor's own, appending
        assert bound_logs(logs, cap=1000) == 2500 + 100
        writer.write(b"after")
    assert big.read_bytes() == b"after"  # the next line starts the emptied file
    assert (logs / "busy.log.1").read_bytes() == b"x" * 3000
    assert small.read_bytes() == b"z" * 10
    assert not gone.exists()
