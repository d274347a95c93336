"""How long the mailbox keeps done messages: a dedup window, pruned while the runtime runs,
not only at its start, so that a runtime that runs for weeks does not grow without bound."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

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
