"""`MailboxStore.insert_many`: one statement for a run of messages, all or nothing."""

from __future__ import annotations

from pathlib import Path

from actors.kernel import MailboxStore, State


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


def test_a_mailbox_from_before_is_migrated_with_its_rows(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "m.db"
    old = sqlite3.connect(path)
    old.executescript(
        """
        CREATE TABLE messages (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
            recipient TEXT NOT NULL, sender TEXT NOT NULL, type TEXT NOT NULL,
            frame BLOB NOT NULL, state INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
            failures INTEGER NOT NULL DEFAULT 0, error TEXT, created_ms INTEGER NOT NULL,
            done_ms INTEGER);
        CREATE TABLE replies (request_id TEXT PRIMARY KEY, caller TEXT NOT NULL,
            frame BLOB NOT NULL) WITHOUT ROWID;
        INSERT INTO messages (seq, id, recipient, sender, type, frame, state, created_ms)
            VALUES (7, 'a', 'r', 's', 't', x'80', 0, 1);
        INSERT INTO replies VALUES ('a', 's', x'81');
        """
    )
    old.close()
    store = MailboxStore(path)
    assert [(m.seq, m.id, m.state) for m in store.messages(limit=10)] == [(7, "a", State.PENDING)]
    assert store.reply_for("a", "s") == b"\x81"
    store.begin()
    assert store.insert_many([("a", "r", "other", "t", b"\x80", False)]) == [8]
    store.commit()
