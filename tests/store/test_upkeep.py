"""What `runtime.db` keeps of its own records: the newest request records with their
applied ids, the newest audit rows none too old (a routine action repeated within a minute
counted on one row), and the conversation whole."""

from __future__ import annotations

import time
from pathlib import Path

from actors.store._schema import open_db
from actors.store._upkeep import (
    FOLD_WINDOW_MS,
    prune_audit_chunk,
    prune_requests_chunk,
    truncate_wal,
    write_audit,
)


def test_request_records_past_the_bound_go_with_their_applied_ids(tmp_path: Path) -> None:
    db = open_db(tmp_path)
    keys = [f"sender/m{i}" for i in range(1200)]
    db.executemany("INSERT INTO lineup_applied (id) VALUES (?)", [(k,) for k in keys])
    db.executemany("INSERT INTO requests (id, reply) VALUES (?, 'null')", [(k,) for k in keys])
    db.execute(
        "INSERT INTO messages (id, seq, conversation_id, envelope) VALUES ('u1', 1, 'c', '{}')"
    )
    pruned = 0
    while (count := prune_requests_chunk(db, keep=300)) > 0:
        pruned += count
    assert pruned == 900
    kept = {row[0] for row in db.execute("SELECT id FROM requests")}
    assert kept == set(keys[-300:])  # the newest, which a redelivery may still need
    assert {row[0] for row in db.execute("SELECT id FROM lineup_applied")} == kept
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == 1  # the user's
    assert truncate_wal(db)
    assert (tmp_path / "runtime.db-wal").stat().st_size == 0


def test_audit_keeps_the_newest_rows_and_none_too_old(tmp_path: Path) -> None:
    db = open_db(tmp_path)
    now = int(time.time() * 1000)
    old = now - 100 * 86_400_000
    db.executemany(
        "INSERT INTO audit (at_ms, code, detail) VALUES (?, 'x', ?)",
        [(old, f"old{i}") for i in range(50)] + [(now, f"new{i}") for i in range(700)],
    )
    while prune_audit_chunk(db, keep=600, days=90) > 0:
        pass
    details = [row[0] for row in db.execute("SELECT detail FROM audit ORDER BY pos")]
    assert details == [f"new{i}" for i in range(100, 700)]


def test_a_routine_action_repeated_within_a_minute_is_counted_on_its_row(tmp_path: Path) -> None:
    db = open_db(tmp_path)
    start = int(time.time() * 1000)
    send, intent = "send in chat by s1", "foreground chat by s1"
    steps = [
        ("ui.action", send, "m1", start),
        ("host.intent", intent, "m2", start + 10),
        ("ui.action", send, "m3", start + 20),  # counted on m1's row, past the intent
        ("ui.action", "send in chat by s2", "m4", start + 30),  # another session: a row
        ("sender_not_allowed", "refused", "m5", start + 40),  # a refusal: a row each
        ("sender_not_allowed", "refused", "m6", start + 50),
        ("ui.action", send, "m7", start + FOLD_WINDOW_MS + 1),  # past the minute: a row
    ]
    for code, detail, message_id, at_ms in steps:
        write_audit(db, code, detail, message_id=message_id, seq=None, source="host", now_ms=at_ms)
    rows = db.execute("SELECT message_id, repeats, last_ms FROM audit ORDER BY pos").fetchall()
    assert rows == [
        ("m1", 2, start + 20),
        ("m2", 1, start + 10),
        ("m4", 1, start + 30),
        ("m5", 1, start + 40),
        ("m6", 1, start + 50),
        ("m7", 1, start + FOLD_WINDOW_MS + 1),
    ]
