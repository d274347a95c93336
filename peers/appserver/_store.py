"""The AppServer's own SQLite file: conversations, the account's stream, submission verdicts.

One account, one append-only stream (docs/protocol.md §4.1): `seq` is assigned here, starts
at 1 and only grows. The server is the only writer (its data dir is locked), so the next
number is known before the insert; the message is stored already stamped with it, exactly as
every peer will receive it. Each accepted message commits together with its submission's
verdict, so a crash can never leave a numbered message whose idempotency key is unknown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import sqlite_utils

from contracts import (
    RUNTIME_GLOBAL_CONVERSATION,
    Code,
    SubmitResult,
    fsync_directory,
    utc_timestamp,
)

STORE_FILE: Final = "appserver.db"
# `messages.agent_id` for `runtime:global`: every agent of the account sees those.
ALL_AGENTS: Final = "*"


@dataclass(frozen=True, slots=True)
class StoredItem:
    seq: int
    body: str  # the message as forwarded: compact JSON, sequence stamped in
    conversation_id: str  # the message's conversation (a legacy one's stamped in too)


@dataclass(frozen=True, slots=True)
class Accepted:
    """An accepted message, ready to be numbered and stored."""

    message_id: str
    conversation_id: str
    agent_id: str  # the conversation's agent, or ALL_AGENTS for runtime:global
    new_conversation: bool
    sender_kind: str
    sender_id: str
    type: str


class Store:
    """Synchronous on purpose: each call is a few indexed statements, done between awaits,
    so the trio tasks of all sessions see one consistent order of accepted messages."""

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._db = sqlite_utils.Database(path)
        self._db.enable_wal()
        # Commits are not synced one by one: the server syncs the WAL (`sync_wal`, one
        # fsync for every commit since the last) before a verdict or a message leaves it,
        # so a peer's cursor, and a sender's certainty that its message was taken, are
        # never ahead of what a power cut leaves of the stream.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._create_schema()
        row = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM messages").fetchone()
        self.last_seq: int = row[0]
        self.writes = 0  # commits so far
        self.synced = 0  # of them, those the last `sync_wal` covered
        self._wal_named = False
        self.sync_wal()  # what a killed server left may still be in the page cache alone

    def sync_wal(self) -> None:
        """Make every commit so far durable: an fsync of the WAL (and, once, of its
        directory, which holds its name). Safe on a worker thread while commits go on: it
        covers at least every commit made before it began."""
        covered = self.writes
        try:
            fd = os.open(f"{self._path}-wal", os.O_RDONLY)
        except FileNotFoundError:  # nothing written since the last checkpoint removed it
            self.synced = max(self.synced, covered)
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if not self._wal_named:
            fsync_directory(self._path.parent)
            self._wal_named = True
        self.synced = max(self.synced, covered)

    def _create_schema(self) -> None:
        db = self._db
        db.table("conversations").create(
            {"id": str, "agent_id": str, "created_by": str, "created_at": str},
            pk="id",
            not_null={"agent_id", "created_by", "created_at"},
            if_not_exists=True,
        )
        db.table("messages").create(
            {
                "seq": int,
                "message_id": str,
                "conversation_id": str,
                "agent_id": str,
                "sender_kind": str,
                "sender_id": str,
                "type": str,
                "accepted_at": str,
                "body": str,
                "size": int,  # UTF-8 bytes of `body`: batches are bounded in bytes (§2)
            },
            pk="seq",
            not_null={"message_id", "conversation_id", "agent_id", "body", "size"},
            if_not_exists=True,
        )
        db.table("messages").create_index(["message_id"], unique=True, if_not_exists=True)
        db.table("messages").create_index(["agent_id", "seq"], if_not_exists=True)
        db.table("submissions").create(
            {
                "peer": str,
                "idempotency_key": str,
                "status": str,
                "seq": int,
                "code": str,
                "detail": str,
                "decided_at": str,
            },
            pk=("peer", "idempotency_key"),
            if_not_exists=True,
        )

    def close(self) -> None:
        self._db.close()

    # --- reads -------------------------------------------------------------------------

    def verdict(self, peer: str, key: str) -> SubmitResult | None:
        """The verdict already given to this peer for this idempotency key, if any."""
        row = self._db.execute(
            "SELECT status, seq, code, detail FROM submissions"
            " WHERE peer = ? AND idempotency_key = ?",
            (peer, key),
        ).fetchone()
        if row is None:
            return None
        status, seq, code, detail = row
        return SubmitResult(
            frame="submit_result",
            idempotency_key=key,
            status=status,
            seq=seq,
            code=None if code is None else Code(code),
            detail=detail,
            duplicate=True,
        )

    def conversation_agent(self, conversation_id: str) -> str | None:
        row = self._db.execute(
            "SELECT agent_id FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def has_message(self, message_id: str) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM messages WHERE message_id = ?", (message_id,)
        ).fetchone()
        return row is not None

    def visible_after(
        self, after: int, *, agent_id: str | None, limit: int, max_bytes: int
    ) -> tuple[list[StoredItem], bool]:
        """Up to `limit` messages with `seq > after` the peer may see, ascending, whose bodies
        add up to at most `max_bytes` (at least one is always returned); and whether they
        reach the end of what the peer may see. `agent_id=None` is a runtime: it sees all."""
        if agent_id is None:
            sql = (
                "SELECT seq, body, size, conversation_id FROM messages WHERE seq > ?"
                " ORDER BY seq LIMIT ?"
            )
            params: tuple[object, ...] = (after, limit + 1)
        else:
            sql = (
                "SELECT seq, body, size, conversation_id FROM messages"
                " WHERE agent_id IN (?, ?) AND seq > ?"
                " ORDER BY seq LIMIT ?"
            )
            params = (agent_id, ALL_AGENTS, after, limit + 1)
        items: list[StoredItem] = []
        size = 0
        for seq, body, body_size, conversation in self._db.execute(sql, params):
            if len(items) == limit:
                return items, False
            size += body_size + 32  # the item's own `{"seq":…,"message":…}` around it
            if items and size > max_bytes:
                return items, False
            items.append(StoredItem(seq, body, conversation))
        return items, True

    def conversation_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM conversations").fetchone()[0])

    # --- writes ------------------------------------------------------------------------

    def append(self, peer: str, key: str, accepted: Accepted, body: str) -> int:
        """Stores `body` as message number `last_seq + 1` with its verdict; returns the seq."""
        seq = self.last_seq + 1
        now = utc_timestamp()
        with self._db.atomic():
            if accepted.new_conversation and accepted.conversation_id != (
                RUNTIME_GLOBAL_CONVERSATION
            ):
                self._db.execute(
                    "INSERT INTO conversations (id, agent_id, created_by, created_at)"
                    " VALUES (?, ?, ?, ?)",
                    (accepted.conversation_id, accepted.agent_id, peer, now),
                )
            self._db.execute(
                "INSERT INTO messages (seq, message_id, conversation_id, agent_id, sender_kind,"
                " sender_id, type, accepted_at, body, size)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    seq,
                    accepted.message_id,
                    accepted.conversation_id,
                    accepted.agent_id,
                    accepted.sender_kind,
                    accepted.sender_id,
                    accepted.type,
                    now,
                    body,
                    len(body.encode()),
                ),
            )
            self._record(peer, key, "accepted", seq=seq, at=now)
        self.last_seq = seq
        self.writes += 1
        return seq

    def reject(self, peer: str, key: str, code: str, detail: str) -> None:
        """Keeps a rejection: a repeated key gets the same definite answer."""
        with self._db.atomic():
            self._record(peer, key, "rejected", code=code, detail=detail, at=utc_timestamp())
        self.writes += 1

    def _record(
        self,
        peer: str,
        key: str,
        status: str,
        *,
        seq: int | None = None,
        code: str | None = None,
        detail: str | None = None,
        at: str,
    ) -> None:
        self._db.execute(
            "INSERT INTO submissions (peer, idempotency_key, status, seq, code, detail,"
            " decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (peer, key, status, seq, code, detail, at),
        )
