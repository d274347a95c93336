"""The app's local event log: its mirror of the App Inbox and of its own actions.

Each app process keeps `app.db` in its private directory (given by the runtime; never the
runtime's data dir). One table, `events`, in arrival order: agent messages delivered to the
app (keyed by message id) and the actions it dispatched (keyed by envelope id) with their
state. A delivery is applied with `applied_once` on its kernel message id, so a replayed
delivery adds nothing; a message delivered twice under different kernel messages is still
stored once (its id is the key). The view model (`_view`) is a fold over this log.
A second table, `tool_calls`, holds the agent's tool calls the app was given (`_tools`):
each is recorded before its handler runs, with its state and the final report, which is
what a restarted app sends again. A third, `capability_requests`, holds the capability
requests asked and not yet answered, with the call that asked: what the app takes back
when that call ends first (`_capabilities`).
Each row keeps the wall-clock time it was applied (`at_ns`, taken inside its transaction):
`lineup bench e2e` reads the agent → app latency from it.

An isolated app is given "." as its directory: its cwd, where the jail mounts its private
directory. It can reach no absolute path under the data dir, and SQLite makes a relative
name absolute with the cwd it sees, so the log works there as anywhere.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from actors.kernel import applied_once, bound_wal, ensure_applied_table

LOG_FILE: Final = "app.db"
# What `json.dumps(value, ensure_ascii=False)` writes, without a new encoder per call.
_encode: Final = json.JSONEncoder(ensure_ascii=False).encode

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    pos INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,              -- 'agent' (delivered), 'action' (dispatched), 'tool',
                                     -- 'consent' (a capability consent card), 'mode' (the
                                     -- conversation's mode), 'speech' (an agent message
                                     -- spoken: `_interaction`)
    conversation_id TEXT NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,             -- received | acked (agent); pending | accepted | rejected
                                     -- | refused (by the app itself: never sent) (action)
    seq INTEGER,
    code TEXT,
    at_ns INTEGER                    -- wall clock (ns) when the app applied it
);
CREATE INDEX IF NOT EXISTS events_conversation ON events (conversation_id, pos);
CREATE TABLE IF NOT EXISTS tool_calls (
    call_id TEXT PRIMARY KEY,
    method TEXT NOT NULL,
    invoke_id TEXT NOT NULL,         -- the kernel id of the invoke that recorded it
    body TEXT NOT NULL,              -- that invoke's body (JSON): what a rerun is given
    state TEXT NOT NULL,             -- running | pending (left to finish later) | finished
    reports INTEGER NOT NULL,        -- report ids taken: the next report's index
    report TEXT,                     -- the final report (JSON), the last one taken
    updated_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS capability_requests (
    request_id TEXT PRIMARY KEY,     -- asked of the gateway, not answered yet
    call_id TEXT,                    -- the tool call whose handler asked (NULL: none)
    withdraw_id TEXT NOT NULL        -- the kernel id its withdrawal is sent under
);
CREATE TABLE IF NOT EXISTS applied_order (
    n INTEGER PRIMARY KEY,           -- the order the kernel messages were applied in
    id TEXT NOT NULL                 -- the kernel id, as `lineup_applied` holds it
);
"""
# How many applied kernel ids the log keeps (`lineup_applied`). A message is redelivered
# only while it is in flight to the app, and the kernel's credit window holds at most a few
# thousand in flight: an id older than the newest ten thousand is never delivered again.
APPLIED_KEPT: Final = 10_000
# How many finished tool calls the log keeps (and none past the mailbox's dedup window): a
# call is given again only while the tool router holds it open, that is until its final
# report reaches the router, and far fewer than this many are on their way at once. The
# oldest beyond it go every `PRUNE_EVERY` calls finished, and when the app starts.
FINISHED_CALLS_KEPT: Final = 200
PRUNE_EVERY: Final = 50
_TOOL_CALL = "SELECT call_id, method, invoke_id, body, state, reports, report FROM tool_calls"


def has_events_table(db: sqlite3.Connection) -> bool:
    """True if `db` holds the log's `events` table (it is written with the file's first
    transaction, so a file just created by the app may not have it yet)."""
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'")
    return found.fetchone() is not None


class EventLog:
    def __init__(
        self, app_dir: str | Path, *, readonly: bool = False, applied_kept: int = APPLIED_KEPT
    ) -> None:
        path = Path(app_dir) / LOG_FILE
        self.applied_kept = applied_kept
        self._finished = 0  # tool calls finished by this log, for `PRUNE_EVERY`
        if readonly:
            self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
            return
        Path(app_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        self.db = sqlite3.connect(path, isolation_level=None, timeout=10)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        bound_wal(self.db)  # each app's file stays near its rows
        self.db.executescript(_SCHEMA)
        ensure_applied_table(self.db)
        # Ids applied before their order was kept are put in order once, to be let go too.
        self.db.execute(
            "INSERT INTO applied_order (id) SELECT id FROM lineup_applied"
            " WHERE NOT EXISTS (SELECT 1 FROM applied_order)"
        )

    @contextmanager
    def _applied_once(self, kernel_id: str) -> Iterator[bool]:
        """The kernel's `applied_once`, its ids kept to the newest `applied_kept`: each
        fresh one is put in order, and every tenth of that many the oldest beyond it go."""
        with applied_once(self.db, kernel_id) as fresh:
            if fresh:
                n = int(
                    self.db.execute(
                        "INSERT INTO applied_order (id) VALUES (?)", (kernel_id,)
                    ).lastrowid
                    or 0
                )
                if n % max(1, self.applied_kept // 10) == 0:
                    last = n - self.applied_kept
                    self.db.execute(
                        "DELETE FROM lineup_applied WHERE id IN"
                        " (SELECT id FROM applied_order WHERE n <= ?)",
                        (last,),
                    )
                    self.db.execute("DELETE FROM applied_order WHERE n <= ?", (last,))
            yield fresh

    def close(self) -> None:
        self.db.close()

    def is_begun(self) -> bool:
        """True once the app has written the log's tables: a reader from outside may open
        the file between the app creating it and its first transaction."""
        return has_events_table(self.db)

    def add_agent_messages(
        self, kernel_id: str, messages: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Store the delivered messages once; the ones new to the log, in order.

        One statement for the run (a catch-up delivers hundreds at a time): the ids already
        in the log are read first, in the same transaction, so the rest are new."""
        new: list[dict[str, Any]] = []
        with self._applied_once(kernel_id) as fresh:
            if not fresh or not messages:
                return new
            known = self._known([m["id"] for m in messages])
            rows = []
            for message in messages:
                if message["id"] in known:
                    continue
                known.add(message["id"])  # delivered twice in one run: stored once
                new.append(message)
                rows.append(
                    (
                        message["id"],
                        message["conversation_id"],
                        message["type"],
                        _encode(message),
                        message.get("seq"),
                        time.time_ns(),
                    )
                )
            self.db.executemany(
                "INSERT INTO events (id, kind, conversation_id, type, body, state, seq, at_ns)"
                " VALUES (?, 'agent', ?, ?, ?, 'received', ?, ?) ON CONFLICT(id) DO NOTHING",
                rows,
            )
        return new

    def _known(self, ids: list[str]) -> set[str]:
        known: set[str] = set()
        for start in range(0, len(ids), 500):  # under SQLite's bound on parameters
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(f"SELECT id FROM events WHERE id IN ({marks})", part)
            known.update(row[0] for row in rows)
        return known

    def add_tool_events(
        self, kernel_id: str, steps: list[tuple[str, dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        """Record steps of agents' tool calls as the runtime reported them (one message's,
        or several sent together), each under its own id, in one transaction; the ones new
        to the log, in order (a step recorded already is not again)."""
        new: list[dict[str, Any]] = []
        with self._applied_once(kernel_id) as fresh:
            if not fresh:
                return new
            known = self._known([step_id for step_id, _ in steps])
            rows = []
            for step_id, event in steps:
                if step_id in known:
                    continue
                known.add(step_id)
                new.append(event)
                rows.append(
                    (
                        step_id,
                        event["conversation_id"],
                        _encode(event),
                        event["state"],
                        event.get("code"),
                        time.time_ns(),
                    )
                )
            self.db.executemany(
                "INSERT INTO events (id, kind, conversation_id, type, body, state, code, at_ns)"
                " VALUES (?, 'tool', ?, 'lineup.tool', ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
                rows,
            )
        return new

    def add_consent_event(self, kernel_id: str, card: dict[str, Any]) -> bool:
        """Record a consent card the capability gateway opened or closed; False if that
        message was recorded already."""
        with self._applied_once(kernel_id) as fresh:
            if not fresh:
                return False
            self.db.execute(
                "INSERT INTO events (id, kind, conversation_id, type, body, state, at_ns)"
                " VALUES (?, 'consent', ?, 'lineup.capability.consent', ?, ?, ?)"
                " ON CONFLICT(id) DO NOTHING",
                (kernel_id, card["conversation_id"], _encode(card), card["state"], time.time_ns()),
            )
            return True

    def add_interaction_event(
        self, kernel_id: str, kind: str, conversation_id: str, body: dict[str, Any]
    ) -> bool:
        """Record a fact of the Interaction App's own (`kind` 'mode' or 'speech') under the
        id `kernel_id`; False if it was recorded already."""
        with self._applied_once(kernel_id) as fresh:
            if not fresh:
                return False
            return bool(
                self.db.execute(
                    "INSERT INTO events (id, kind, conversation_id, type, body, state, at_ns)"
                    " VALUES (?, ?, ?, ?, ?, 'recorded', ?) ON CONFLICT(id) DO NOTHING",
                    (
                        kernel_id,
                        kind,
                        conversation_id,
                        f"lineup.chat.{kind}",
                        _encode(body),
                        time.time_ns(),
                    ),
                ).rowcount
            )

    def add_action(
        self,
        kernel_id: str,
        action: dict[str, Any],
        *,
        state: str = "pending",
        code: str | None = None,
    ) -> bool:
        """Record a dispatched action as pending (the local echo), or one the app refused
        itself (`state="refused"` with its code: never sent); False if already there."""
        with self._applied_once(kernel_id) as fresh:
            if not fresh:
                return False
            return bool(
                self.db.execute(
                    "INSERT INTO events (id, kind, conversation_id, type, body, state, code)"
                    " VALUES (?, 'action', ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
                    (
                        action["id"],
                        action.get("conversation_id", ""),
                        action["action"],
                        _encode(action),
                        state,
                        code,
                    ),
                ).rowcount
            )

    def set_action_state(self, kernel_id: str, update: Mapping[str, Any]) -> bool:
        """The state an action of the app's reached (`ActionState`); False when it was
        applied before or names no pending action of the app's."""
        with self._applied_once(kernel_id) as fresh:
            if not fresh:
                return False
            return bool(
                self.db.execute(
                    "UPDATE events SET state = ?, seq = ?, code = ? WHERE id = ?"
                    " AND kind = 'action' AND state = 'pending'",
                    (update["state"], update.get("seq"), update.get("code"), update["id"]),
                ).rowcount
            )

    def mark_acked(self, ids: list[str]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany(
            "UPDATE events SET state = 'acked' WHERE id = ? AND kind = 'agent'", [(i,) for i in ids]
        )
        self.db.execute("COMMIT")

    def unacked(self, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            f"SELECT id FROM events WHERE state = 'received' AND id IN ({marks})", ids
        )
        return {row[0] for row in rows}

    def events_by_id(self, event_id: str) -> Iterator[dict[str, Any]]:
        pos = self.db.execute("SELECT pos FROM events WHERE id = ?", (event_id,)).fetchone()
        if pos is not None:
            yield from self.events(after=pos[0] - 1, limit=1)

    def events(
        self,
        *,
        conversation_id: str | None = None,
        after: int = 0,
        kind: str | None = None,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        query = (
            "SELECT pos, id, kind, conversation_id, type, body, state, seq, code FROM events"
            " WHERE pos > ?"
        )
        params: list[Any] = [after]
        if conversation_id is not None:
            query += " AND conversation_id = ?"
            params.append(conversation_id)
        if kind is not None:
            query += " AND kind = ?"
            params.append(kind)
        query += " ORDER BY pos"
        if limit is not None:
            query += " LIMIT ?"
            params.append(limit)
        for pos, id_, kind_, conv, type_, body, state, seq, code in self.db.execute(query, params):
            yield {
                "pos": pos,
                "id": id_,
                "kind": kind_,
                "conversation_id": conv,
                "type": type_,
                "body": json.loads(body),
                "state": state,
                "seq": seq,
                "code": code,
            }

    def names_artifact(self, conversation_id: str, artifact_id: str) -> bool:
        """Whether `conversation_id` shows the artifact `artifact_id`: a step of a tool call
        there handed it to the agent (the reference is the tool router's, checked against
        the store: one of the calling app's own artifacts), it is the speech of an agent
        message there, or the recording a spoken message of the user's there was written
        out from (both the Interaction App's own, made for it by the capability gateway)."""
        found = self.db.execute(
            "SELECT 1 FROM events WHERE conversation_id = ? AND ("
            "(kind IN ('tool', 'speech') AND json_extract(body, '$.artifact.artifact_id') = ?)"
            " OR (kind = 'action' AND json_extract(body, '$.audio.artifact_id') = ?)) LIMIT 1",
            (conversation_id, artifact_id, artifact_id),
        ).fetchone()
        return found is not None

    # -- tool calls (see `_tools`) ---------------------------------------------------------

    def add_tool_call(self, invoke_id: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """Record a call as running, durably, before its handler runs. The row recorded
        before for the same call id instead, if there is one (the call is not new)."""
        added = self.db.execute(
            "INSERT INTO tool_calls (call_id, method, invoke_id, body, state, reports,"
            " updated_ns) VALUES (?, ?, ?, ?, 'running', 0, ?) ON CONFLICT(call_id) DO NOTHING",
            (body["call_id"], body["method"], invoke_id, _encode(body), time.time_ns()),
        ).rowcount
        if added:
            return None
        return self.tool_calls("WHERE call_id = ?", body["call_id"])[0]

    def tool_calls(self, where: str = "", *params: Any) -> list[dict[str, Any]]:
        rows = self.db.execute(f"{_TOOL_CALL} {where} ORDER BY rowid", params).fetchall()
        return [_tool_call(row) for row in rows]

    def take_report_index(self, call_id: str) -> int | None:
        """The index of an open call's next report, taken for good; None if it is not open."""
        return self._take(call_id, "reports = reports + 1", ())

    def finish_tool_call(self, call_id: str, report: str | None) -> int | None:
        """End an open call with its final report (JSON; None: ended without one) in one
        write; the report's index, or None if the call was not open.

        The write is not synced before the report leaves: the runtime keeps a call's first
        final, durably, before the agent hears it. A power cut that takes the write takes
        all the app wrote after it; the restarted app ends the call again (run again, or
        `handler_failed`) under the same index, so with the lost report's kernel id."""
        with self._unsynced():
            index = self._take(
                call_id, "reports = reports + 1, state = 'finished', report = ?", (report,)
            )
        if index is not None:
            self._finished += 1
            if self._finished % PRUNE_EVERY == 0:
                self.prune_tool_calls(before_ns=0)
        return index

    def leave_tool_call_pending(self, call_id: str) -> None:
        """Its handler returned and the app finishes it later: no longer a running call."""
        self.db.execute(
            "UPDATE tool_calls SET state = 'pending' WHERE call_id = ? AND state = 'running'",
            (call_id,),
        )

    def prune_tool_calls(self, before_ns: int, keep: int = FINISHED_CALLS_KEPT) -> None:
        """Forget the finished calls that ended before `before_ns` or past the newest
        `keep` finished."""
        self.db.execute(
            "DELETE FROM tool_calls WHERE state = 'finished' AND (updated_ns < ? OR call_id"
            " NOT IN (SELECT call_id FROM tool_calls WHERE state = 'finished'"
            " ORDER BY updated_ns DESC LIMIT ?))",
            (before_ns, keep),
        )

    @contextmanager
    def _unsynced(self) -> Iterator[None]:
        """Writes a power cut may take: the WAL keeps them in order, and the next synced
        write makes them durable with its own."""
        self.db.execute("PRAGMA synchronous=NORMAL")
        try:
            yield
        finally:
            self.db.execute("PRAGMA synchronous=FULL")

    def _take(self, call_id: str, change: str, params: tuple[Any, ...]) -> int | None:
        # Read to its end: a RETURNING statement's change commits once it is done.
        rows = self.db.execute(
            f"UPDATE tool_calls SET {change}, updated_ns = ?"
            " WHERE call_id = ? AND state != 'finished' RETURNING reports",
            (*params, time.time_ns(), call_id),
        ).fetchall()
        return int(rows[0][0]) - 1 if rows else None

    # -- capability requests waiting for their answer (see `_capabilities`) -----------------

    def ask_capability(self, request_id: str, call_id: str | None, withdraw_id: str) -> None:
        self.db.execute(
            "INSERT INTO capability_requests (request_id, call_id, withdraw_id) VALUES (?, ?, ?)"
            " ON CONFLICT(request_id) DO UPDATE SET call_id = excluded.call_id,"
            " withdraw_id = excluded.withdraw_id",
            (request_id, call_id, withdraw_id),
        )

    def capability_answered(self, request_id: str) -> None:
        self.db.execute("DELETE FROM capability_requests WHERE request_id = ?", (request_id,))

    def unanswered_capabilities(self) -> list[tuple[str, str | None, str]]:
        """(request id, the call that asked or None, its withdrawal's id), oldest first."""
        rows = self.db.execute(
            "SELECT request_id, call_id, withdraw_id FROM capability_requests ORDER BY rowid"
        )
        return [(str(request_id), call_id, str(withdraw)) for request_id, call_id, withdraw in rows]


def _tool_call(row: tuple[Any, ...]) -> dict[str, Any]:
    call_id, method, invoke_id, body, state, reports, report = row
    return {
        "call_id": call_id,
        "method": method,
        "invoke_id": invoke_id,
        "body": json.loads(body),
        "state": state,
        "reports": reports,
        "report": None if report is None else json.loads(report),
    }
