"""Each app instance's session data in `runtime.db`: one JSON object per `app_scope +
instance_id`, with a revision that only goes up.

The app decides what the object means; the store owns who may touch it, the order of the
writes, their durability and their clean-up, and checks nothing but that it is JSON within
`SessionDataLimits`:

- **Who.** The scope is the sender's stamp (`app.<scope>`), never a body field: only an
  app's own process reads or writes its data, and the runtime's actors and the operator
  have none. The instance is a live instance of that scope in the registry (the app
  manager's record): an id of another scope is `ownership_mismatch`, decided from the id
  alone (instance ids are `<scope>:<local>`), so the answer says nothing about another
  app's instances; a closed instance (a stale context) or an unknown id is
  `instance_not_found`. Without an `instance_id`, the scope's only live instance.
- **Order.** A replace names the revision it was made from: anything else is
  `revision_conflict` and the newer data stays (nothing is merged). So a replace can never
  apply twice: once applied, the revision it names is behind. It is one transaction, which
  also records its answer under the scope and message id (`app_session_requests`), so a
  request redelivered after a crash gets the first answer rather than a conflict. An app
  chooses how many requests it sends, so the record keeps its newest `KEEP_ANSWERS` only:
  a redelivery is of a message the store had not acknowledged yet, far fewer than that.
- **Subscriptions are no state here.** Only the app's own process writes its data, so
  every committed replace is announced to that process (`app.session_data.changed`, after
  the commit, its id derived from the request's so a replay announces it once), and the
  SDK hands it to the listeners it has. A subscription is the SDK's: its first frame is a
  `store.session_data.get`, answered in the store's serial order, so a write is either in
  that frame or announced after it. Nothing to lose when the store restarts.
- **Clean-up.** Removing an app (the user's confirmed `remove`) deletes its rows in the
  transaction that removes its record (`forget_scopes`); disabling it, closing an instance
  or restarting anything keeps them: an instance launched again under the same id (a tool
  app's is `<scope>:<conversation>`) finds its last revision.

What session data cannot do is by construction: it is rows of its own table, so a replace
touches no tool call, outbox item, focus stack or instance.

| table | key | content |
|---|---|---|
| `app_session_data` | (`app_scope`, `instance_id`) | `data` (compact JSON text), `revision`, |
| | | `size_bytes`, `updated_ms` |
| `app_session_requests` | `pos` (unique `app_scope`, `request_id`) | `reply`: the answer to each |
| | | of an app's newest 256 replaces |

A request asked again by a restarted app under the same id is answered from the mailbox's
replies; none goes to the store's general `requests`.

**Quotas** (`SessionDataLimits`, the store's config `session_data`): 128 KiB of compact
UTF-8 JSON (`too_large`), 16 levels of nesting, the object itself being one (`too_deep`),
4,096 keys in all its objects (`too_large`); it must be a JSON object with string keys and
finite numbers (`invalid_payload`): `{}` clears it. They sit under the supervisor's limits
on an app's bodies, so that the store answers with its own codes.

`read_session_data(data_dir)` lists each instance's `app_scope`, `instance_id`,
`revision`, `size_bytes` and `updated_ms`, without the data; `lineup app data [APP]
[--json]` shows them, runtime up or not. `tests/hostile/test_session_data.py` holds a
replace to being only data: it never ends a tool call, writes the outbox, moves the focus
or an instance, whatever the data looks like.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from actors.app_manager.registry import RegistryReader
from actors.kernel import Actor, Message, crash_point, derive_id, handles
from contracts import Code, ContractError

from .door import SessionDataGet, SessionDataReplace

TABLE: Final = "app_session_data"
ANSWERS: Final = "app_session_requests"
KEEP_ANSWERS: Final = 256  # per app: the answers to its newest replaces
COLUMNS: Final = ("app_scope", "instance_id", "data", "revision", "size_bytes", "updated_ms")
SUMMARY_COLUMNS: Final = ("app_scope", "instance_id", "revision", "size_bytes", "updated_ms")
CHANGED: Final = "app.session_data.changed"
_APP_PREFIX: Final = "app."
_encode: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class SessionDataLimits(BaseModel):
    """What one instance's session data may hold: checked by the store on every replace
    (the store's config `session_data`). Under an app's message limits, so that the
    store's own codes answer what gets that far."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_bytes: int = Field(
        default=128 * 1024, ge=2, description="bytes of the data as compact UTF-8 JSON"
    )
    max_depth: int = Field(default=16, ge=1, description="nesting; the object itself is 1")
    max_keys: int = Field(default=4096, ge=0, description="keys of all its objects, all told")


def check_data(data: Any, limits: SessionDataLimits) -> str:
    """`data` as the compact JSON text to keep, once it is a JSON object within `limits`;
    else `invalid_payload`, `too_deep` or `too_large` naming what is wrong."""
    if not isinstance(data, dict):
        raise ContractError(
            Code.INVALID_PAYLOAD, "data: session data is a JSON object ({} clears it)"
        )
    keys = 0
    stack: list[tuple[Any, int, str]] = [(data, 1, "data")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict | list) and depth > limits.max_depth:
            raise ContractError(Code.TOO_DEEP, f"{where}: deeper than {limits.max_depth} levels")
        if isinstance(value, dict):
            keys += len(value)
            if keys > limits.max_keys:
                raise ContractError(Code.TOO_LARGE, f"more than {limits.max_keys} keys in all")
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ContractError(
                        Code.INVALID_PAYLOAD, f"{where}: a key that is not a string"
                    )
                stack.append((item, depth + 1, f"{where}.{key[:40]}"))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, f"{where}[{n}]") for n, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise ContractError(Code.INVALID_PAYLOAD, f"{where}: {value} is not a JSON number")
        elif value is not None and not isinstance(value, str | int | float):
            kind = type(value).__name__
            raise ContractError(Code.INVALID_PAYLOAD, f"{where}: a {kind} is not a JSON value")
    text = _encode.encode(data)
    size = len(text.encode())
    if size > limits.max_bytes:
        raise ContractError(Code.TOO_LARGE, f"{size} bytes of JSON, over {limits.max_bytes}")
    return text


def app_scope_of(sender: str) -> str:
    """The scope of the app process that sent a message: only apps have session data."""
    if not sender.startswith(_APP_PREFIX):
        raise ContractError(
            Code.SENDER_NOT_ALLOWED, "session data is an app's, asked by its process"
        )
    return sender.removeprefix(_APP_PREFIX)


def live_instance(registry: RegistryReader, scope: str, instance_id: Any) -> str:
    """The instance a request of `scope` is about (see the module's rule), by the registry
    as the app manager last committed it."""
    live = [instance for instance, _ in registry.live_instances(scope)]
    if instance_id is None:
        if len(live) == 1:
            return live[0]
        if not live:
            raise ContractError(Code.INSTANCE_NOT_FOUND, f"{scope} has no running instance")
        raise ContractError(
            Code.INVALID_PAYLOAD,
            f"instance_id: {scope} has {len(live)} running instances; name the one meant",
        )
    instance = str(instance_id)
    if not instance.startswith(f"{scope}:"):
        raise ContractError(
            Code.OWNERSHIP_MISMATCH, f"{instance[:140]!r} is not an instance of {scope}"
        )
    if instance not in live:
        raise ContractError(Code.INSTANCE_NOT_FOUND, f"no running instance {instance[:140]!r}")
    return instance


def snapshot(db: sqlite3.Connection, scope: str, instance: str) -> dict[str, Any]:
    """{instance_id, data, revision}: `data` None and `revision` 0 before the first write."""
    row = db.execute(
        f"SELECT data, revision FROM {TABLE} WHERE app_scope = ? AND instance_id = ?",
        (scope, instance),
    ).fetchone()
    data, revision = (json.loads(row[0]), int(row[1])) if row else (None, 0)
    return {"instance_id": instance, "data": data, "revision": revision}


def forget_scopes(db: sqlite3.Connection, scopes: Iterable[str]) -> None:
    """Delete the session data of removed apps (inside the caller's transaction)."""
    for scope in scopes:
        db.execute(f"DELETE FROM {TABLE} WHERE app_scope = ?", (scope,))
        db.execute(f"DELETE FROM {ANSWERS} WHERE app_scope = ?", (scope,))


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def applied_once(
    db: sqlite3.Connection, scope: str, request_id: str, apply: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """`apply()` and the record of its answer in one transaction; a request recorded already
    gets its answer again. A refusal records nothing (asked again, it is decided again)."""
    with _transaction(db):
        row = db.execute(
            f"SELECT reply FROM {ANSWERS} WHERE app_scope = ? AND request_id = ?",
            (scope, request_id),
        ).fetchone()
        if row is not None:
            answer: dict[str, Any] = json.loads(row[0])
            return answer
        answer = apply()
        db.execute(
            f"INSERT INTO {ANSWERS} (app_scope, request_id, reply) VALUES (?, ?, ?)",
            (scope, request_id, json.dumps(answer)),
        )
        db.execute(
            f"DELETE FROM {ANSWERS} WHERE app_scope = ? AND pos <= (SELECT pos FROM {ANSWERS}"
            " WHERE app_scope = ? ORDER BY pos DESC LIMIT 1 OFFSET ?)",
            (scope, scope, KEEP_ANSWERS),
        )
        return answer


class SessionDataTables(Actor):
    """The store's handlers for the apps' session data (mixed into `StoreActor`)."""

    db: sqlite3.Connection
    registry: RegistryReader
    _session_limits: SessionDataLimits | None = None

    def session_limits(self) -> SessionDataLimits:
        if self._session_limits is None:
            self._session_limits = SessionDataLimits(**self.config.get("session_data", {}))
        return self._session_limits

    @handles("store.session_data.get")
    async def session_data_get(self, msg: Message[SessionDataGet]) -> Any:
        """Body {`instance_id`?}; reply {`instance_id`, `data`, `revision`}."""
        scope = app_scope_of(msg.sender)
        return snapshot(
            self.db, scope, live_instance(self.registry, scope, msg.body.get("instance_id"))
        )

    @handles("store.session_data.replace")
    async def session_data_replace(self, msg: Message[SessionDataReplace]) -> Any:
        """Body {`instance_id`?, `data`, `expected_revision`}; reply {`instance_id`,
        `revision`} (the new one), then `app.session_data.changed` to the app's process."""
        scope = app_scope_of(msg.sender)
        body = msg.body

        def apply() -> dict[str, Any]:
            instance = live_instance(self.registry, scope, body.get("instance_id"))
            text = check_data(body.get("data"), self.session_limits())
            current = snapshot(self.db, scope, instance)["revision"]
            expected = body.get("expected_revision")
            if expected != current:
                raise ContractError(
                    Code.REVISION_CONFLICT,
                    f"expected revision {expected}, the current one is {current}: get it again",
                )
            self.db.execute(
                f"INSERT OR REPLACE INTO {TABLE} ({', '.join(COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)",
                (scope, instance, text, current + 1, len(text.encode()), time.time_ns() // 10**6),
            )
            return {"instance_id": instance, "revision": current + 1}

        reply = applied_once(self.db, scope, msg.id, apply)
        crash_point("store.session_data_after_commit")
        changed = {**reply, "data": body["data"]}
        await self.cast(msg.sender, CHANGED, changed, id=derive_id(msg.id, 1))
        return reply
