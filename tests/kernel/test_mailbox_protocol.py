"""The mailbox protocol, fuzzed: a Hypothesis state machine drives `MailboxStore` on a real
SQLite file the way the switchboard and one recipient do (send, deliver, handle, ack, fail,
crash of the recipient, crash and restart of the whole runtime, redrive) and checks after
every step that nothing is lost, nothing is applied twice, each sender's order is kept, and
nothing is stuck in flight after recovery.

The recipient applies messages with `applied_once` into its own SQLite file, as a real
actor does, so a redelivery after a crash is absorbed there, not in the model.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from pathlib import Path

import msgpack
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from actors.kernel import MailboxStore, State, applied_once, ensure_applied_table, new_id

RECIPIENT = "r"
SENDERS = ("a", "b")
MAX_DELIVER = 2


class MailboxProtocol(RuleBasedStateMachine):
    @initialize()
    def open_files(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="mailbox-protocol-"))
        self.store = MailboxStore(self.dir / "mailbox.db", synchronous="NORMAL")
        self.app = sqlite3.connect(self.dir / "app.db", isolation_level=None)
        ensure_applied_table(self.app)
        self.app.execute("CREATE TABLE applied (pos INTEGER PRIMARY KEY, id TEXT, sender TEXT)")
        # the model
        self.sent: dict[str, str] = {}  # committed message id -> sender, in send order
        self.order: dict[str, list[str]] = {s: [] for s in SENDERS}  # ids per sender
        self.unsent: list[tuple[str, str]] = []  # sends lost with an uncommitted txn
        self.delivered: list[tuple[int, str]] = []  # (seq, id) at the recipient, in order
        self.handled: list[int] = []  # seqs handled, ack not yet sent
        self.ever_dead: set[str] = set()
        self.dead: set[str] = set()
        self.acked: set[str] = set()
        self.failures: dict[str, int] = {}

    def teardown(self) -> None:
        if hasattr(self, "store"):
            self._drain_everything()
            self.store.close()
            self.app.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    @contextlib.contextmanager
    def txn(self):  # type: ignore[no-untyped-def]
        self.store.begin()
        try:
            yield
        except BaseException:
            self.store.rollback()
            raise
        self.store.commit()

    def _insert(self, message_id: str, sender: str) -> int | None:
        frame = msgpack.packb({"id": message_id, "from": sender, "type": "t", "body": None})
        return self.store.insert(
            message_id=message_id,
            recipient=RECIPIENT,
            sender=sender,
            type="t",
            frame=frame,
            inflight=False,
        )

    # -- senders ---------------------------------------------------------------------------

    @rule(sender=st.sampled_from(SENDERS), n=st.integers(1, 4))
    def send(self, sender: str, n: int) -> None:
        with self.txn():
            for _ in range(n):
                message_id = new_id()
                assert self._insert(message_id, sender) is not None
                self.sent[message_id] = sender
                self.order[sender].append(message_id)

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data())
    def send_duplicate(self, data: st.DataObject) -> None:
        """A replayed handler re-emits an id the mailbox has seen: it is ignored."""
        message_id = data.draw(st.sampled_from(sorted(self.sent)))
        before = self.store.counts().get(RECIPIENT)
        with self.txn():
            assert self._insert(message_id, self.sent[message_id]) is None
        assert self.store.counts().get(RECIPIENT) == before

    @rule(sender=st.sampled_from(SENDERS))
    def send_then_crash_before_commit(self, sender: str) -> None:
        """The runtime dies with a send uncommitted: the sender (not acked) will resend it."""
        message_id = new_id()
        self.store.begin()
        self._insert(message_id, sender)
        self._restart_runtime()
        self.unsent.append((message_id, sender))

    @precondition(lambda self: bool(self.unsent))
    @rule()
    def resend_lost(self) -> None:
        message_id, sender = self.unsent.pop(0)
        with self.txn():
            assert self._insert(message_id, sender) is not None
        self.sent[message_id] = sender
        self.order[sender].append(message_id)

    # -- the switchboard and the recipient -------------------------------------------------

    @rule(limit=st.integers(1, 5))
    def deliver(self, limit: int) -> None:
        pending_before = [
            r.seq
            for r in self.store.messages(recipient=RECIPIENT, states=(State.PENDING,), limit=limit)
        ]
        with self.txn():
            batch = self.store.take(RECIPIENT, limit)
        # the oldest pending messages, in mailbox order
        assert [d.seq for d in batch] == pending_before
        for d in batch:
            frame = msgpack.unpackb(d.frame)
            assert d.attempts >= 1
            self.delivered.append((d.seq, frame["id"]))

    @precondition(lambda self: len(self.delivered) > len(self.handled))
    @rule(n=st.integers(1, 3))
    def handle(self, n: int) -> None:
        """The recipient applies its next deliveries, in order, each at most once."""
        for seq, message_id in self.delivered[len(self.handled) : len(self.handled) + n]:
            with applied_once(self.app, message_id) as fresh:
                if fresh:
                    self.app.execute(
                        "INSERT INTO applied (id, sender) VALUES (?, ?)",
                        (message_id, self.sent[message_id]),
                    )
            self.handled.append(seq)

    @precondition(lambda self: bool(self.handled))
    @rule()
    def ack(self) -> None:
        """The recipient's batched ack of what it handled."""
        with self.txn():
            assert self.store.ack(RECIPIENT, self.handled) == len(self.handled)
        done = set(self.handled)
        for seq, message_id in self.delivered:
            if seq in done:
                self.acked.add(message_id)
        self.delivered = [(s, i) for s, i in self.delivered if s not in done]
        self.handled = []

    @precondition(lambda self: len(self.delivered) > len(self.handled))
    @rule()
    def fail(self) -> None:
        """The next handler raised: count it, hand everything back (the switchboard's fail)."""
        seq, message_id = self.delivered[len(self.handled)]
        with self.txn():
            if self.handled:
                self.store.ack(RECIPIENT, self.handled)
                self.acked.update(i for s, i in self.delivered if s in set(self.handled))
            self.failures[message_id] = self.failures.get(message_id, 0) + 1
            dead = self.store.fail(seq, "boom", max_deliver=MAX_DELIVER)
            assert dead == (self.failures[message_id] == MAX_DELIVER)
            if dead:
                event("dead letter")
                self.dead.add(message_id)
                self.ever_dead.add(message_id)
            self.store.requeue(RECIPIENT)
        self.delivered, self.handled = [], []

    @rule()
    def crash_recipient(self) -> None:
        """The recipient died: its unacked deliveries go back to pending, in order."""
        with self.txn():
            self.store.requeue(RECIPIENT)
        self.delivered, self.handled = [], []

    @rule()
    def crash_runtime(self) -> None:
        """kill -9 of the supervisor (and so of the recipient), then start again."""
        self._restart_runtime()

    def _restart_runtime(self) -> None:
        self.store._db.close()  # no commit, no rollback: what was uncommitted is lost
        self.store = MailboxStore(self.dir / "mailbox.db", synchronous="NORMAL")
        with self.txn():
            self.store.recover()
        self.delivered, self.handled = [], []
        assert self.store.counts().get(RECIPIENT, _NO_COUNTS).inflight == 0, (
            "a message is stuck in flight after recovery"
        )

    @precondition(lambda self: bool(self.dead))
    @rule(data=st.data())
    def redrive(self, data: st.DataObject) -> None:
        message_id = data.draw(st.sampled_from(sorted(self.dead)))
        with self.txn():
            assert self.store.redrive(message_id) == RECIPIENT
        self.dead.discard(message_id)
        self.failures[message_id] = 0
        event("redrive")
        row = self.store.message(message_id)
        assert row is not None
        assert (row.state, row.failures, row.error) == (State.PENDING, 0, None)

    def _drain_everything(self) -> None:
        """At the end, a restart and a full drain apply every message that is not dead."""
        self._restart_runtime()
        for message_id, sender in self.unsent:
            with self.txn():
                self._insert(message_id, sender)
            self.sent[message_id] = sender
            self.order[sender].append(message_id)
        self.unsent = []
        while True:
            self.deliver(1000)
            if not self.delivered:
                break
            self.handle(len(self.delivered))
            self.ack()
        self.nothing_lost()
        self.nothing_applied_twice_and_order_kept()
        applied = {i for (i,) in self.app.execute("SELECT id FROM applied")}
        assert set(self.sent) - self.dead <= applied, "a live message was never applied"
        assert applied <= set(self.sent)

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def nothing_lost(self) -> None:
        if not hasattr(self, "store"):
            return
        rows = {
            r.id: r
            for r in self.store.messages(recipient=RECIPIENT, states=tuple(State), limit=1_000_000)
        }
        assert set(rows) == set(self.sent), "the mailbox lost or invented a message"
        for message_id, row in rows.items():
            if message_id in self.dead:
                assert row.state is State.DEAD
                assert row.error == "boom"
            elif message_id in self.acked:
                assert row.state is State.DONE
            else:
                assert row.state in (State.PENDING, State.INFLIGHT)
        inflight = {r.seq for r in rows.values() if r.state is State.INFLIGHT}
        assert inflight == {seq for seq, _ in self.delivered}, "in flight but not delivered"

    @invariant()
    def nothing_applied_twice_and_order_kept(self) -> None:
        if not hasattr(self, "store"):
            return
        applied = list(self.app.execute("SELECT id, sender FROM applied ORDER BY pos"))
        ids = [message_id for message_id, _ in applied]
        assert len(ids) == len(set(ids)), "a message was applied twice"
        assert self.acked <= set(ids), "a message was acked but never applied"
        for sender in SENDERS:
            # A dead letter that is redriven is applied late by design; everything else
            # is applied in the order its sender sent it.
            got = [i for i, s in applied if s == sender and i not in self.ever_dead]
            sent_order = [i for i in self.order[sender] if i in set(got)]
            assert got == sent_order, f"{sender}'s messages were applied out of order"


_NO_COUNTS = type("NoCounts", (), {"inflight": 0})()

MailboxProtocol.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_mailbox_protocol = MailboxProtocol.TestCase
