"""`MailboxStore` on a real file: runs of inserts, cursors and acks, seqs."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from actors.kernel import MailboxCounts, MailboxStore, State
from actors.kernel.supervising._mailbox import HOLD_LIMIT, WAL_KEPT_BYTES


def _row(message_id: str, inflight: bool = False) -> tuple[str, str, str, str, bytes, bool]:
    return (message_id, "r", "s", "t", b"\x80", inflight)


def test_a_run_gets_consecutive_seqs_after_the_last_one(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    first = store.insert(
        message_id="a", recipient="r", sender="s", type="t", frame=b"\x80", inflight=False
    )
    assert first is not None
    seqs = store.insert_many([_row("b"), _row("c", inflight=True), _row("d")])
    store.commit()
    assert seqs == [first + 1, first + 2, first + 3]
    states = {m.id: (m.seq, m.state, m.attempts) for m in store.messages(limit=10)}
    assert states["c"] == (first + 2, State.INFLIGHT, 1)
    assert states["d"] == (first + 3, State.PENDING, 0)


def test_a_duplicate_in_the_run_stores_none_of_it(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    assert store.insert_many([_row("a"), _row("b")]) is not None
    assert store.insert_many([_row("c"), _row("a"), _row("d")]) is None  # "a" again
    assert store.insert_many([_row("e"), _row("e")]) is None  # twice in one run
    store.commit()
    assert [m.id for m in store.messages(limit=10)] == ["a", "b"]


def test_ids_are_unique_per_sender(tmp_path: Path) -> None:
    """A replayed sender's id is dropped; the same id from another sender is not, so no
    actor (an app least of all) can use up the ids another actor will derive."""
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    mine = store.insert(
        message_id="x", recipient="r", sender="app_manager", type="t", frame=b"\x80", inflight=False
    )
    theirs = store.insert(
        message_id="x", recipient="r", sender="app.evil", type="t", frame=b"\x80", inflight=False
    )
    again = store.insert(
        message_id="x", recipient="r", sender="app_manager", type="t", frame=b"\x80", inflight=False
    )
    assert store.store_reply("x", "app.evil", b"evil")
    assert store.store_reply("x", "app_manager", b"mine")
    assert not store.store_reply("x", "app_manager", b"replayed")
    store.commit()
    assert mine is not None and theirs is not None and again is None
    assert store.reply_for("x", "app_manager") == b"mine"
    assert store.message("x", sender="app.evil").seq == theirs  # type: ignore[union-attr]


def _states(store: MailboxStore) -> dict[str, State]:
    return {m.id: m.state for m in store.messages(states=tuple(State), limit=100)}


def _raw_states(path: Path) -> dict[str, int]:
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as db:
        return dict(db.execute("SELECT id, state FROM messages"))


def test_an_ack_of_the_oldest_moves_the_cursor_and_writes_no_row(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    seqs = store.insert_many([_row(i, inflight=True) for i in "abc"]) or []
    assert store.ack("r", seqs[:2]) == 2
    store.commit()
    assert _states(store) == {"a": State.DONE, "b": State.DONE, "c": State.INFLIGHT}
    assert _raw_states(tmp_path / "m.db") == {"a": 1, "b": 1, "c": 1}
    assert store.counts()["r"] == MailboxCounts(inflight=1)
    # What the writer knows, a read-only store reads from the file.
    assert MailboxStore(tmp_path / "m.db", readonly=True).counts()["r"] == MailboxCounts(inflight=1)


def test_an_ack_out_of_order_marks_its_rows_and_nothing_else(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    a, b, c = store.insert_many([_row(i, inflight=True) for i in "abc"]) or []
    assert store.ack("r", [b]) == 1
    assert store.ack("other", [a]) == 0  # not its message
    assert store.ack("r", [b]) == 0  # already done
    store.commit()
    assert _states(store) == {"a": State.INFLIGHT, "b": State.DONE, "c": State.INFLIGHT}
    store.begin()
    assert store.ack("r", [a, c]) == 2
    store.commit()
    assert set(_states(store).values()) == {State.DONE}


def test_a_rolled_back_ack_leaves_the_cursor_where_it_was(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    a, b = store.insert_many([_row(i, inflight=True) for i in "ab"]) or []
    store.commit()
    store.begin()
    assert store.ack("r", [a, b]) == 2
    store.rollback()
    assert _states(store) == {"a": State.INFLIGHT, "b": State.INFLIGHT}
    store.begin()
    assert store.requeue("r") == 2
    store.commit()
    assert _states(store) == {"a": State.PENDING, "b": State.PENDING}


def test_seqs_are_not_reused_after_done_rows_are_pruned(tmp_path: Path) -> None:
    """A new message must never get a seq at or below its recipient's cursor, where it
    would be born done: not after the last rows were pruned, not after a reopen."""
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    seqs = store.insert_many([_row(i, inflight=True) for i in "ab"]) or []
    store.ack("r", seqs)
    assert store.prune(done_before_ms=2**62) == (2, None, None)
    store.commit()
    store.close()
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    (new,) = store.insert_many([_row("c")]) or []
    store.commit()
    assert new > seqs[-1]
    assert _states(store) == {"c": State.PENDING}


def test_a_redriven_dead_letter_goes_behind_the_cursor_to_the_end(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    a, b = store.insert_many([_row(i, inflight=True) for i in "ab"]) or []
    assert store.fail(a, "boom", max_deliver=1)
    store.requeue("r")
    assert [d.seq for d in store.take("r", 10)] == [b]
    assert store.ack("r", [b]) == 1  # the cursor passes the dead letter
    assert store.redrive("a") == "r"
    store.commit()
    row = store.message("a")
    assert row is not None and row.seq > b
    assert (row.state, row.failures, row.error) == (State.PENDING, 0, None)
    store.begin()
    assert [d.seq for d in store.take("r", 10)] == [row.seq]
    store.commit()


def test_settle_moves_an_idle_recipients_cursor_up_to_its_new_message(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    (a,) = store.insert_many([_row("a", inflight=True)]) or []
    assert store.ack("r", [a]) == 1
    others = store.insert_many([(f"o{n}", "other", "s", "t", b"\x80", False) for n in range(50)])
    assert others is not None
    (b,) = store.insert_many([_row("b", inflight=True)]) or []
    store.settle("r", b)
    store.commit()
    cursor = store._db.execute("SELECT acked FROM cursors WHERE recipient = 'r'").fetchone()[0]
    assert cursor == b - 1  # past the others' 50 rows, which the next ack need not read
    assert _states(store)["b"] is State.INFLIGHT
    store.begin()
    assert store.ack("r", [b]) == 1
    store.commit()
    assert _states(store)["b"] is State.DONE


def test_settle_leaves_the_cursor_below_a_pending_message(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    (a,) = store.insert_many([_row("a")]) or []  # pending
    (b,) = store.insert_many([_row("b", inflight=True)]) or []
    store.settle("r", b)
    store.commit()
    cursor = store._db.execute("SELECT acked FROM cursors WHERE recipient = 'r'").fetchone()[0]
    assert cursor == a - 1
    assert _states(store) == {"a": State.PENDING, "b": State.INFLIGHT}


def test_the_wal_is_cut_back_once_it_starts_over(tmp_path: Path) -> None:
    """A burst grows the WAL far past its usual size; after the next checkpoint and commit
    the file is no bigger than the kept size, not its peak."""
    store = MailboxStore(tmp_path / "m.db", synchronous="NORMAL")
    checkpointer = MailboxStore(tmp_path / "m.db", synchronous="NORMAL")
    wal = tmp_path / "m.db-wal"
    frame = b"\x80" * 4096
    for batch in range(8):
        store.begin()
        store.insert_many([(f"{batch}-{i}", "r", "s", "t", frame, False) for i in range(1000)])
        store.commit()
    peak = wal.stat().st_size
    assert peak > 2 * WAL_KEPT_BYTES
    pages, copied = checkpointer.checkpoint()
    assert pages == copied  # all of it copied back: the WAL may start over
    store.begin()
    store.insert_many([_row("after")])
    store.commit()
    assert wal.stat().st_size <= WAL_KEPT_BYTES
    checkpointer.close()
    store.close()


def test_a_prune_goes_a_chunk_at_a_time_and_keeps_what_is_not_done(tmp_path: Path) -> None:
    """Chunk after chunk, every done row goes, a waiting and a dead one stay, and a row
    too young ends the walk."""
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    seqs = store.insert_many([_row(f"d{i}", inflight=True) for i in range(5)]) or []
    store.ack("r", seqs)
    (waiting,) = store.insert_many([_row("waiting")]) or []
    (dead,) = store.insert_many([_row("dead", inflight=True)]) or []
    assert store.fail(dead, "boom", max_deliver=1)
    store.commit()
    store.begin()
    assert store.prune(done_before_ms=2**62, limit=2) == (2, seqs[1], None)
    assert store.prune(done_before_ms=2**62, after_seq=seqs[1], limit=2) == (2, seqs[3], None)
    assert store.prune_all(done_before_ms=2**62).pruned == 1
    assert store.prune(done_before_ms=0, limit=1) == (0, None, None)  # every row too young
    store.commit()
    assert _states(store) == {"waiting": State.PENDING, "dead": State.DEAD}
    assert waiting < dead


def test_the_size_cap_takes_the_oldest_done_rows_inside_the_window_and_says_so(
    tmp_path: Path,
) -> None:
    """Past the cap, done rows inside the dedup window go, oldest first, and the prune
    says how young the youngest of them was; the newest `max_done` seqs stay whatever
    their state, and a waiting or dead row below the cap stays too."""
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    store.insert_many([_row("waiting")])
    (dead,) = store.insert_many([_row("dead", inflight=True)]) or []
    assert store.fail(dead, "boom", max_deliver=1)
    done = store.insert_many([_row(f"d{i}", inflight=True) for i in range(300)]) or []
    store.ack("r", done)
    store.commit()
    store.begin()
    step = store.prune_all(done_before_ms=0, keep_from_seq=store.cap_seq(100))  # window: all
    store.commit()
    assert step.pruned == 200 and step.newest_forced_ms is not None
    ids = {row[0] for row in store._db.execute("SELECT id FROM messages")}
    assert ids == {"waiting", "dead"} | {f"d{i}" for i in range(200, 300)}
    store.begin()  # within the cap nothing more goes
    assert store.prune_all(done_before_ms=0, keep_from_seq=store.cap_seq(100)).pruned == 0
    store.commit()
    store.close()


def _done_after_a_handed_out_row(tmp_path: Path, done: int, handed_back: bool) -> MailboxStore:
    """A message handed to "slow" and not acked, then `done` messages to "r", acked."""
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    store.insert(
        message_id="slow", recipient="slow", sender="s", type="t", frame=b"\x80", inflight=True
    )
    if handed_back:
        store.requeue("slow")  # its process died: pending again, with an attempt behind it
    acked = store.insert_many([_row(f"d{i}", inflight=True) for i in range(done)]) or []
    store.ack("r", acked)
    store.commit()
    return store


def _kept_done(store: MailboxStore) -> set[str]:
    return {row[0] for row in store._db.execute("SELECT id FROM messages WHERE id != 'slow'")}


def test_a_message_handed_out_and_not_acked_holds_the_cap(tmp_path: Path) -> None:
    """Its handler may run again and send what it sent under the same ids: every done row
    younger than it stays past the cap, whether it is in flight or was handed back."""
    for handed_back in (False, True):
        where = tmp_path / str(handed_back)
        where.mkdir()
        store = _done_after_a_handed_out_row(where, 300, handed_back)
        store.begin()
        step = store.prune_all(done_before_ms=0, **store.cap_bounds(100))
        store.commit()
        assert step.pruned == 0
        assert _kept_done(store) == {f"d{i}" for i in range(300)}
        store.close()


def test_a_stuck_message_holds_the_cap_only_so_far(tmp_path: Path) -> None:
    """Once the message handed out is `HOLD_LIMIT` caps old, the cap takes its usual
    rows again: one stuck message does not keep the mailbox growing."""
    done = HOLD_LIMIT * 100 + 100
    store = _done_after_a_handed_out_row(tmp_path, done, handed_back=False)
    store.begin()
    step = store.prune_all(done_before_ms=0, **store.cap_bounds(100))
    store.commit()
    assert step.pruned == done - 100  # every done row but the newest 100 seqs
    assert _kept_done(store) == {f"d{i}" for i in range(done - 100, done)}
    assert [m.id for m in store.messages(limit=1)] == ["slow"]  # live rows are never pruned
    store.close()


def test_an_idle_truncate_leaves_no_wal_and_every_row(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "m.db")
    store.begin()
    store.insert_many([_row(f"m{i}") for i in range(500)])
    store.commit()
    wal = tmp_path / "m.db-wal"
    assert wal.stat().st_size > 0
    assert store.truncate_wal()
    assert wal.stat().st_size == 0
    assert store.counts()["r"].pending == 500
    store.close()


def _cursor_on_disk(path: Path, recipient: str) -> int | None:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT acked FROM cursors WHERE recipient = ?", (recipient,)).fetchone()
    return None if row is None else int(row[0])


def test_acks_alone_are_held_until_a_transaction_writes(tmp_path: Path) -> None:
    """A transaction of acks alone writes nothing; the next one that writes writes them
    first, a rolled back one keeps them held, and closing the mailbox writes them."""
    path = tmp_path / "m.db"
    store = MailboxStore(path)
    store.begin()
    seqs = store.insert_many([_row(f"m{i}", inflight=True) for i in range(3)]) or []
    assert store.commit() is True
    before = _cursor_on_disk(path, "r")

    store.begin(acks_only=True)
    store.advance("r", seqs[1])
    assert store.commit() is False and store.acks_held
    assert _cursor_on_disk(path, "r") == before  # held in memory only
    assert [m.state for m in store.messages(limit=3)] == [State.INFLIGHT] * 3  # on disk

    store.begin()  # a transaction that writes: the held acks go first, and go with it
    store.insert_many([_row("later")])
    store.rollback()
    assert store.acks_held and _cursor_on_disk(path, "r") == before

    store.begin()
    store.insert_many([_row("later")])
    assert store.commit() is True and not store.acks_held
    assert _cursor_on_disk(path, "r") == seqs[1]

    store.begin(acks_only=True)
    store.advance("r", seqs[2])
    store.commit()
    store.close()
    assert _cursor_on_disk(path, "r") == seqs[2]


def test_an_ack_that_reads_the_rows_writes_the_held_ones_first(tmp_path: Path) -> None:
    """An ack out of order marks its rows in the same transaction: it is a write, so the
    acks held before it are written too, and the transaction says it wrote."""
    path = tmp_path / "m.db"
    store = MailboxStore(path)
    store.begin()
    seqs = store.insert_many([_row(f"m{i}", inflight=True) for i in range(4)]) or []
    store.commit()
    store.begin(acks_only=True)
    store.advance("r", seqs[0])
    store.ack("r", [seqs[2]])  # not the oldest live one: its row is marked
    assert store.commit() is True and not store.acks_held
    assert _cursor_on_disk(path, "r") == seqs[0]
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        marked = dict(db.execute("SELECT id, state FROM messages").fetchall())
    assert marked["m2"] == State.DONE and marked["m1"] == marked["m3"] == State.INFLIGHT
    store.close()
