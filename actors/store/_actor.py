"""The store actor: the only writer of `runtime.db`.

Every mutating request is applied inside `applied_once` on the request's kernel message id,
and its reply is written in the same transaction (`requests`). A request redelivered after
a crash (the kernel's at-least-once) finds its record and gets the very same reply, so the
caller's next steps, whose ids derive from its own message, are the same too.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from actors.app_manager.registry import RegistryReader
from actors.kernel import Message, applied_once, derive_id, handles
from contracts import Code, ContractError, OutboxVerdict

from ._apps import AppTables
from ._artifacts import ArtifactTables
from ._diagnostics import DiagnosticsTables
from ._overview import OverviewTables
from ._schema import open_db
from ._session_data import SessionDataTables
from ._upkeep import StoreUpkeep, write_audit
from .door import DOOR, Audit, Empty, Enqueue, Lifecycle, Pending, Persist

log = logging.getLogger("lineup.store")

_CURSOR = "appserver"


def _now_ms() -> int:
    return int(time.time() * 1000)


class StoreActor(
    AppTables,
    ArtifactTables,
    SessionDataTables,
    DiagnosticsTables,
    OverviewTables,
    StoreUpkeep,
):
    """Owns `runtime.db`: conversations, messages, cursor, outbox, audit, lifecycle, apps,
    the apps' session data, artifacts, diagnostics."""

    door = DOOR

    db: sqlite3.Connection

    async def on_start(self) -> None:
        data_dir = self.config.get("data_dir")
        if not data_dir:
            raise RuntimeError("the store needs `data_dir` in its config")
        self.db = open_db(data_dir, synchronous=str(self.config.get("synchronous", "FULL")))
        self.registry = RegistryReader(data_dir)  # the app manager's, read-only (`_apps`)
        self.open_artifacts()  # its quotas, and the files of a create a crash cut short
        self.start_upkeep()  # the bounds of its request records and audit, and its WAL
        self.persisted = 0

    def statistics_extra(self) -> dict[str, Any]:
        return {"persisted": self.persisted, "cursor": self._cursor()}

    # -- helpers ---------------------------------------------------------------------------

    def _cursor(self) -> int:
        row = self.db.execute("SELECT value FROM cursor WHERE name = ?", (_CURSOR,)).fetchone()
        return int(row[0]) if row else 0

    def _once(self, msg: Message, apply: Callable[[], Any]) -> Any:
        """Apply `msg` once; a replay gets the reply recorded with the first application.

        Keyed by sender and id, as the mailbox is: an actor cannot use up another's ids.
        """
        key = f"{msg.sender}/{msg.id}"
        with applied_once(self.db, key) as fresh:
            if fresh:
                reply = apply()
                self.db.execute(
                    "INSERT INTO requests (id, reply) VALUES (?, ?)", (key, json.dumps(reply))
                )
                self.note_write()
                return reply
            row = self.db.execute("SELECT reply FROM requests WHERE id = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def _audit(
        self, code: str, detail: str, message_id: str | None, seq: int | None, source: str
    ) -> None:
        write_audit(
            self.db,
            code,
            detail[:500],
            message_id=message_id,
            seq=seq,
            source=source,
            now_ms=_now_ms(),
        )

    def _enqueue(
        self, items: Sequence[Mapping[str, Any]], fresh: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """Queue `items` once each (by key); their orders. With `fresh`, the items new to
        the outbox are added to it as the transport submits them: {order, key, envelope}."""
        orders = []
        now = _now_ms()
        for item in items:
            inserted = self.db.execute(
                "INSERT INTO outbox (key, envelope, origin, conversation_id, state, created_ms)"
                " VALUES (?, ?, ?, ?, 'pending', ?) ON CONFLICT(key) DO NOTHING",
                (item["key"], item["envelope"], item.get("origin"), item["conversation_id"], now),
            ).rowcount
            row = self.db.execute(
                "SELECT local_order FROM outbox WHERE key = ?", (item["key"],)
            ).fetchone()
            orders.append(int(row[0]))
            if inserted and fresh is not None:
                fresh.append(
                    {"order": int(row[0]), "key": item["key"], "envelope": item["envelope"]}
                )
        return orders

    # -- inbound: the persist step of the filter chain ----------------------------------------

    @handles("store.inbound.persist")
    async def inbound_persist(self, msg: Message[Persist]) -> Any:
        """Persist what the router accepted, its rejections and the cursor, in one commit.

        Body: `items` [{seq, id, conversation_id, app_scope, type, sender_kind, sender_id,
        envelope}], `rejections` [{seq, message_id, code, detail}], `outbox` [{key,
        envelope, origin, conversation_id}] (rejection envelopes), `associate`
        {conversation_id: agent_id}, `cursor`. Reply: `duplicates` [{id, seq}] (an id
        already stored under another seq: the filter chain's dedup step), `cursor`.

        The router answers the duplicates and the transport from this reply; a replay gets
        the recorded reply, so it decides the same.
        """
        body = msg.body

        def apply() -> dict[str, Any]:
            now = _now_ms()
            stored = 0
            duplicates: list[dict[str, Any]] = []
            for conversation, agent in body.get("associate", {}).items():
                self.db.execute(
                    "INSERT INTO conversations (conversation_id, agent_id, first_seq, created_ms)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT(conversation_id) DO NOTHING",
                    (conversation, agent, body.get("cursor"), now),
                )
            for item in body.get("items", []):
                inserted = self.db.execute(
                    "INSERT INTO messages (id, seq, conversation_id, app_scope, type,"
                    " sender_kind, sender_id, envelope, received_ms)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
                    (
                        item["id"],
                        item["seq"],
                        item["conversation_id"],
                        item["app_scope"],
                        item["type"],
                        item["sender_kind"],
                        item["sender_id"],
                        item["envelope"],
                        now,
                    ),
                ).rowcount
                if not inserted:
                    row = self.db.execute(
                        "SELECT seq FROM messages WHERE id = ?", (item["id"],)
                    ).fetchone()
                    if row and row[0] != item["seq"]:  # else: a redelivery, silently dropped
                        duplicates.append({"id": item["id"], "seq": item["seq"]})
                        self._audit(
                            "duplicate",
                            f"id already stored at seq {row[0]}",
                            item["id"],
                            item["seq"],
                            msg.sender,
                        )
                    continue
                stored += 1
            for rejection in body.get("rejections", []):
                self._audit(
                    rejection["code"],
                    rejection.get("detail", ""),
                    rejection.get("message_id"),
                    rejection.get("seq"),
                    msg.sender,
                )
            self._enqueue(body.get("outbox", []))
            cursor = max(self._cursor(), int(body.get("cursor") or 0))
            self.db.execute(
                "INSERT INTO cursor (name, value) VALUES (?, ?)"
                " ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                (_CURSOR, cursor),
            )
            self.persisted += stored
            return {"duplicates": duplicates, "cursor": cursor}

        return self._once(msg, apply)

    @handles("store.cursor.get")
    async def cursor_get(self, msg: Message[Empty]) -> Any:
        return {"cursor": self._cursor()}

    @handles("store.conversations")
    async def conversations(self, msg: Message[Empty]) -> Any:
        rows = self.db.execute("SELECT conversation_id, agent_id FROM conversations")
        return {"conversations": dict(rows.fetchall())}

    # -- outbox (docs/protocol.md §4.5) ----------------------------------------------------

    @handles("store.outbox.enqueue")
    async def outbox_enqueue(self, msg: Message[Enqueue]) -> Any:
        """Body `items` [{key, envelope, origin, conversation_id}]; reply `orders`."""
        return self._once(msg, lambda: {"orders": self._enqueue(msg.body["items"])})

    @handles("store.outbox.pending")
    async def outbox_pending(self, msg: Message[Pending]) -> Any:
        """Items still waiting for a verdict, in local order after `after`."""
        rows = self.db.execute(
            "SELECT local_order, key, envelope FROM outbox"
            " WHERE state = 'pending' AND local_order > ? ORDER BY local_order LIMIT ?",
            (int(msg.body.get("after", 0)), int(msg.body.get("limit", 256))),
        )
        return {"items": [{"order": o, "key": k, "envelope": e} for o, k, e in rows]}

    @handles("store.outbox.settle")
    async def outbox_settle(self, msg: Message[OutboxVerdict]) -> Any:
        """Record the AppServer's verdict once: `key`, `status`, `seq`?, `code`?, `detail`?;
        then, after the commit, tell the app whose action it was (`app.action.state`).

        Reply `changed` (False when the item was settled already), `origin`."""
        body = msg.body

        def apply() -> dict[str, Any]:
            row = self.db.execute(
                "SELECT state, origin FROM outbox WHERE key = ?", (body["key"],)
            ).fetchone()
            if row is None:
                raise ContractError(Code.INVALID_PAYLOAD, f"no outbox item {body['key']}")
            if row[0] != "pending":
                return {"changed": False, "origin": row[1]}
            status = "accepted" if body["status"] == "accepted" else "rejected"
            self.db.execute(
                "UPDATE outbox SET state = ?, seq = ?, code = ?, detail = ?, settled_ms = ?"
                " WHERE key = ?",
                (
                    status,
                    body.get("seq"),
                    body.get("code"),
                    body.get("detail"),
                    _now_ms(),
                    body["key"],
                ),
            )
            if status == "rejected":
                self._audit(
                    body.get("code") or "rejected",
                    body.get("detail") or "",
                    body["key"],
                    None,
                    "appserver",
                )
            return {"changed": True, "origin": row[1], "state": status}

        reply = self._once(msg, apply)
        if reply["changed"] and reply.get("origin"):
            state = {"id": body["key"], "state": reply["state"]}
            for extra in ("seq", "code", "detail"):
                if body.get(extra) is not None:
                    state[extra] = body[extra]
            # The id derives from the verdict's: a replay tells the app once.
            await self.cast(
                f"app.{reply['origin']}", "app.action.state", state, id=derive_id(msg.id, 1)
            )
        return reply

    # -- audit and lifecycle -----------------------------------------------------------------

    @handles("store.audit")
    async def audit(self, msg: Message[Audit]) -> None:
        body = msg.body
        self._once(
            msg,
            lambda: self._audit(
                body["code"],
                body.get("detail", ""),
                body.get("message_id"),
                body.get("seq"),
                msg.sender,
            ),
        )

    @handles("store.lifecycle.set")
    async def lifecycle_set(self, msg: Message[Lifecycle]) -> None:
        """The runtime's connection lifecycle, reported by the transport."""
        self._set_lifecycle(msg.body["state"], msg.body.get("detail", ""))

    def _set_lifecycle(self, state: str, detail: str) -> None:
        self.db.execute(
            "INSERT INTO lifecycle (name, state, detail, at_ms) VALUES ('runtime', ?, ?, ?)"
            " ON CONFLICT(name) DO UPDATE SET state = excluded.state, detail = excluded.detail,"
            " at_ms = excluded.at_ms",
            (state, detail, _now_ms()),
        )
