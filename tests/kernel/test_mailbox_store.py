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
