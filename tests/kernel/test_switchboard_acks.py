"""The switchboard's acks on a real mailbox file and a real channel: the common ack (the
oldest in flight, nothing waiting on disk) moves the cursor without reading rows, and
whichever way an ack goes, what the rows say once it is written is the same. A batch of
acks alone is held in memory until a batch that writes, or `write_acks`."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from actors.kernel import MailboxStore, State
from actors.kernel.supervising._switchboard import Endpoint, Op, Outcome, Switchboard
from actors.kernel.wire import Channel, pack_body


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Switchboard]:
    a, b = socket.socketpair()
    store = MailboxStore(tmp_path / "mailbox.db")
    board = Switchboard(store, batch_max=256, queue_size=1024)
    _up(board, a, window=8)
    yield board
    store.close()
    a.close()
    b.close()


def _up(board: Switchboard, sock: socket.socket, *, window: int, max_deliver: int = 3) -> None:
    """The sink's incarnation is ready on `sock`."""
    up = {"channel": Channel(sock), "window": window, "max_deliver": max_deliver}
    board._apply_batch([("up", "sink", up, None, None)])


def _messages(ids: list[str], to: str = "sink", sender: str = "producer") -> list[Op]:
    ops: list[Op] = []
    for message_id in ids:
        frame = {"v": 1, "id": message_id, "to": to, "type": "item", "body": pack_body(None)}
        ops.append(("message", sender, frame, None, msgpack.packb(frame)))
    return ops


def _ack(board: Switchboard, seqs: list[int], *, written: bool = True) -> None:
    """The sink acks `seqs`; with `written`, the acks held are written after."""
    board._apply_batch([("ack", "sink", seqs, None, None)])
    if written:
        _write_held_acks(board)


def _write_held_acks(board: Switchboard) -> None:
    board._apply_batch([("write_acks", "", None, None, None)])


def _states(board: Switchboard, to: str = "sink") -> dict[str, State]:
    rows = board.store.messages(recipient=to, states=tuple(State), limit=10_000)
    return {m.id: m.state for m in rows}


def _sink(board: Switchboard) -> Endpoint:
    return board.endpoints["sink"]


def test_in_order_acks_move_the_cursor_and_the_rows_agree(board: Switchboard) -> None:
    board._apply_batch(_messages(["a", "b", "c", "d"]))
    seqs = list(_sink(board).inflight)
    assert len(seqs) == 4 and seqs == sorted(seqs)
    _ack(board, seqs[:2])
    assert _states(board) == {
        "a": State.DONE,
        "b": State.DONE,
        "c": State.INFLIGHT,
        "d": State.INFLIGHT,
    }
    _ack(board, seqs[2:])
    assert set(_states(board).values()) == {State.DONE}
    # A restart hands back only what is still in flight: nothing.
    board.store.begin()
    assert board.store.requeue("sink") == 0
    board.store.commit()


def test_acks_alone_commit_nothing_and_still_hold_at_a_restart(board: Switchboard) -> None:
    """A batch of acks alone is no commit: its credits are free at once, its cursor is
    written by the next batch that writes, here the sink's end, which hands back only
    what was not acked."""
    board._apply_batch(_messages(["a", "b"]))
    seqs = list(_sink(board).inflight)
    batches, credits = board.batches, _sink(board).credits
    _ack(board, seqs[:1], written=False)
    assert board.batches == batches and board.store.acks_held
    assert _sink(board).credits == credits + 1
    assert _states(board)["a"] == State.INFLIGHT  # not on disk yet
    board._apply_batch([("down", "sink", {"blame": False}, None, None)])
    assert not board.store.acks_held and board.batches == batches + 1
    assert _states(board) == {"a": State.DONE, "b": State.PENDING}


def test_an_ack_that_skips_the_oldest_is_checked_against_the_rows(board: Switchboard) -> None:
    board._apply_batch(_messages(["a", "b", "c"]))
    seqs = list(_sink(board).inflight)
    _ack(board, [seqs[1]])  # not the oldest: marked in its row, the cursor stays
    assert _states(board) == {"a": State.INFLIGHT, "b": State.DONE, "c": State.INFLIGHT}
    _ack(board, [seqs[0], seqs[2]])
    assert set(_states(board).values()) == {State.DONE}


def test_with_a_backlog_on_disk_acks_still_leave_the_waiting_messages_live(
    board: Switchboard,
) -> None:
    # Window 8: ten messages, two wait on disk.
    board._apply_batch(_messages([f"m{n}" for n in range(10)]))
    ep = _sink(board)
    first = list(ep.inflight)
    assert len(first) == 8 and ep.backlog
    _ack(board, first)  # frees credits: the two from disk go out in the same batch
    states = _states(board)
    assert [states[f"m{n}"] for n in range(8)] == [State.DONE] * 8
    assert [states[f"m{n}"] for n in (8, 9)] == [State.INFLIGHT] * 2
    _ack(board, list(ep.inflight))
    assert set(_states(board).values()) == {State.DONE}


def test_a_seq_acked_twice_in_one_frame_frees_one_credit(board: Switchboard) -> None:
    board._apply_batch(_messages(["a", "b"]))
    ep = _sink(board)
    credits = ep.credits
    first = next(iter(ep.inflight))
    _ack(board, [first, first])
    assert ep.credits == credits + 1
    assert ep.acked == 1
    assert _states(board) == {"a": State.DONE, "b": State.INFLIGHT}


def test_other_recipients_rows_between_do_not_stop_the_cursor(board: Switchboard) -> None:
    board._apply_batch(_messages(["a"]) + _messages(["x1", "x2"], to="other") + _messages(["b"]))
    seqs = list(_sink(board).inflight)
    _ack(board, seqs)
    assert set(_states(board).values()) == {State.DONE}
    assert set(_states(board, "other").values()) == {State.PENDING}


def test_at_normal_the_wal_is_synced_only_before_what_leaves_the_device(tmp_path: Path) -> None:
    store = MailboxStore(tmp_path / "mailbox.db", synchronous="NORMAL")
    board = Switchboard(store, batch_max=256, queue_size=64)
    inside, outside, sender = socket.socketpair(), socket.socketpair(), socket.socketpair()
    try:
        _up(board, inside[0], window=8)
        up = {"channel": Channel(outside[0]), "window": 8, "max_deliver": 3}
        board._apply_batch([("up", "transport", {**up, "reaches_outside": True}, None, None)])
        synced = board.syncs
        board._apply_batch(_messages(["a", "b"]))  # actor to actor: not synced
        assert board.syncs == synced
        board._apply_batch(_messages(["c"], to="transport"))
        assert board.syncs == synced + 1
        # An answer to a socket's request (the page's "stored") waits for the barrier too.
        request = Outcome()
        board._apply_batch([("message", "ui", _messages(["d"])[0][2], request, None)])
        assert board.syncs == synced + 2 and request.done.is_set()
        # An actor that syncs its own file before it sends to the transport: its deliveries
        # there need no barrier, but one from another in the same batch does.
        synced_first = {**up, "channel": Channel(sender[0]), "syncs_before": ["transport"]}
        board._apply_batch([("up", "router", synced_first, None, None)])
        board._apply_batch(_messages(["e", "f"], to="transport", sender="router"))
        assert board.syncs == synced + 2
        board._apply_batch(
            _messages(["g"], to="transport", sender="router") + _messages(["h"], to="transport")
        )
        assert board.syncs == synced + 3
    finally:
        store.close()
        for pair in (inside, outside, sender):
            for end in pair:
                end.close()


def test_a_wal_left_by_a_killed_runtime_is_checkpointed_after_the_first_commit(
    tmp_path: Path,
) -> None:
    writer = MailboxStore(tmp_path / "mailbox.db")
    writer.begin()
    for n in range(3_000):  # a killed runtime's commits, never checkpointed
        writer.insert(
            message_id=f"m{n}",
            recipient="sink",
            sender="producer",
            type="item",
            frame=bytes(2_000),
            inflight=False,
        )
    writer.commit()
    store = MailboxStore(tmp_path / "mailbox.db")  # the next start, the first still open
    board = Switchboard(store, batch_max=256, queue_size=64)
    try:
        assert store.wal_pages() >= board.checkpoint_pages
        board._apply_batch(_messages(["next"], to="other"))
        assert board.wal_dirty.is_set()
    finally:
        store.close()
        writer.close()


class SwitchboardAcks(RuleBasedStateMachine):
    """The switchboard driven as its actors drive it (messages, acks in order and out of
    order, a seq twice, a handler failure, a crash and a new incarnation), with a small
    window so that messages also wait on disk. After every step the rows say done for
    exactly the acked messages, and what is in flight is what the switchboard holds."""

    @initialize()
    def open(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="switchboard-acks-"))
        self.sock, self.peer = socket.socketpair()
        self.board = Switchboard(
            MailboxStore(self.dir / "mailbox.db"), batch_max=256, queue_size=64
        )
        self.count = 0
        self.acked: set[str] = set()
        self._up()

    def teardown(self) -> None:
        if hasattr(self, "board"):
            self.board.store.close()
            self.sock.close()
            self.peer.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def _up(self) -> None:
        _up(self.board, self.sock, window=4, max_deliver=1000)

    def _inflight(self) -> list[int]:
        return list(_sink(self.board).inflight)

    @rule(n=st.integers(1, 6), other=st.booleans())
    def send(self, n: int, other: bool) -> None:
        ids = [f"m{self.count + i:04}" for i in range(n)]
        self.count += n
        ops = _messages(ids)
        if other:  # another actor's message in between: its seq must not stop the cursor
            ops.insert(n // 2, _messages([f"o{self.count:04}"], to="other")[0])
        self.board._apply_batch(ops)

    @precondition(lambda self: bool(self._inflight()))
    @rule(data=st.data())
    def ack_oldest(self, data: st.DataObject) -> None:
        inflight = self._inflight()
        seqs = inflight[: data.draw(st.integers(1, len(inflight)))]
        self._ack(seqs)

    @precondition(lambda self: bool(self._inflight()))
    @rule(data=st.data())
    def ack_any(self, data: st.DataObject) -> None:
        inflight = self._inflight()
        seqs = data.draw(st.lists(st.sampled_from(inflight), min_size=1, max_size=6))
        self._ack(seqs)

    def _ack(self, seqs: list[int]) -> None:
        ids = {m.seq: m.id for m in self.board.store.messages(recipient="sink", limit=1000)}
        self.acked.update(ids[seq] for seq in seqs)
        _ack(self.board, seqs, written=False)

    @rule()
    def write_held_acks(self) -> None:
        _write_held_acks(self.board)

    @precondition(lambda self: bool(self._inflight()))
    @rule()
    def handler_failed(self) -> None:
        seq = self._inflight()[0]
        self.board._apply_batch([("fail", "sink", {"seq": seq, "error": "boom"}, None, None)])

    @rule()
    def crash_and_restart(self) -> None:
        self.board._apply_batch([("down", "sink", {"blame": False}, None, None)])
        self._up()

    @invariant()
    def rows_agree(self) -> None:
        if not hasattr(self, "board"):
            return
        # Acks held in memory are not on disk yet: the rows may trail them, never lead.
        states = _states(self.board)
        done = {i for i, state in states.items() if state == State.DONE}
        in_flight = {
            m.seq
            for m in self.board.store.messages(
                recipient="sink", states=(State.INFLIGHT,), limit=1000
            )
        }
        assert done <= self.acked and in_flight >= set(self._inflight())
        if not self.board.store.acks_held:
            assert done == self.acked
            assert in_flight == set(self._inflight())
        assert set(_states(self.board, "other").values()) <= {State.PENDING}


TestSwitchboardAcks = SwitchboardAcks.TestCase
TestSwitchboardAcks.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
