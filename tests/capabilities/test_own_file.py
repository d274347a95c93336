"""The capability gateway keeps its requests and grants in a file of its own: a data dir
from before, with its rows in the store's `runtime.db`, has them moved once (a grant the
user gave there still holds), and an audit row a step wrote reaches the store once even
when the gateway dies before handing it over."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

from actors.capability_gateway import read_grants
from actors.capability_gateway._db import GatewayFile
from actors.store import open_db as open_runtime_db
from tests.runtime.helpers import Stack, wait_for

from .helpers import asked, audit_of, gateway_rows, keeper_ready, requests

NOTE = {"title": "Keeper", "text": "tea is ready"}

# What a runtime from before the gateway had its own file left in `runtime.db`.
_OLDER_TABLES = (
    "CREATE TABLE capability_requests (request_id TEXT PRIMARY KEY, app_scope TEXT,"
    " capability TEXT, purpose TEXT, input TEXT, prepared TEXT, conversation_id TEXT,"
    " caller TEXT, kernel_id TEXT, state TEXT, status TEXT, code TEXT, output TEXT,"
    " created_ms INTEGER, deadline_ms INTEGER, updated_ms INTEGER)",
    "CREATE TABLE capability_grants (app_scope TEXT, capability TEXT, scope TEXT, boot TEXT,"
    " granted_ms INTEGER, PRIMARY KEY (app_scope, capability))",
)
MOVED = "moved the capability gateway's rows from runtime.db into capability_gateway.db"


def _an_older_data_dir(data_dir: Path) -> None:
    """The store's `runtime.db` with the user's "always" for the keeper's notifications and
    a request that ended, in the tables the store kept them in before."""
    open_runtime_db(data_dir).close()
    with closing(sqlite3.connect(data_dir / "runtime.db")) as db, db:
        for table in _OLDER_TABLES:
            db.execute(table)
        db.execute(
            "INSERT INTO capability_grants VALUES"
            " ('keeper', 'notification.show', 'always', 'boot-before', 1)"
        )
        db.execute(
            "INSERT INTO capability_requests (request_id, app_scope, capability, state, status,"
            " created_ms, updated_ms) VALUES ('keeper/before', 'keeper', 'notification.show',"
            " 'finished', 'completed', 1, ?)",
            (int(time.time() * 1000),),  # changed now: not forgotten as old at the next start
        )


async def test_an_older_data_dirs_grants_move_once_and_still_hold(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    _an_older_data_dir(stack.data_dir)
    agent = await keeper_ready(stack, keeper, env={"LINEUP_LOG_LEVEL": "INFO"})
    grants = [(g["app_scope"], g["capability"], g["scope"]) for g in read_grants(stack.data_dir)]
    assert grants == [("keeper", "notification.show", "always")]
    # The user said "always" before: no card, the notification is shown.
    assert (await asked(agent, "n-1", "notification.show", input=NOTE))["status"] == "completed"
    assert requests(stack)[0]["request_id"] == "keeper/before"
    assert await audit_of(stack, requests(stack)[-1]["request_id"]) == [
        "capability.started",
        "capability.completed",
    ]
    # Moved once: a restart finds them moved and moves nothing again.
    assert stack.runtime is not None
    stack.runtime.stop()
    await stack.start_runtime(env={"LINEUP_LOG_LEVEL": "INFO"})
    assert (await asked(agent, "n-2", "notification.show", input=NOTE))["status"] == "completed"
    log = stack.data_dir / "logs" / "capability_gateway.log"
    assert log.read_text().count(MOVED) == 1
    # The store keeps no capability rows of its own any more.
    with closing(sqlite3.connect(f"file:{stack.data_dir / 'runtime.db'}?mode=ro", uri=True)) as db:
        before = db.execute("SELECT count(*) FROM capability_grants").fetchone()
    assert before == (1,)  # read, never written or emptied
    assert gateway_rows(stack, "SELECT count(*) FROM audit_outbox") == [(0,)]


async def test_an_audit_row_left_in_the_file_reaches_the_store_once(
    stack: Stack, keeper: tuple[Path, Path]
) -> None:
    """A gateway that committed a step and died before handing its audit row over: the row
    waits in its file, and the next start hands it to the store, under the id it was
    written with, once however often it is handed."""
    stack.data_dir.mkdir(parents=True, exist_ok=True)
    left = GatewayFile(stack.data_dir)
    written = left.write({"audit": [{"code": "capability.left", "detail": "from before"}]})
    left.close()
    ((key, _),) = written.audit
    # The same row handed twice (the first cast reached the store, the delete did not).
    again = GatewayFile(stack.data_dir)
    again.db.execute(
        "INSERT OR IGNORE INTO audit_outbox (id, code, detail) VALUES (?, ?, ?)",
        (key, "capability.left", "from before"),
    )
    again.close()

    await keeper_ready(stack, keeper)
    left_rows = [a for a in stack.audit() if a["code"] == "capability.left"]
    assert [(a["detail"], a["source"]) for a in left_rows] == [
        ("from before", "capability_gateway")
    ]
    assert gateway_rows(stack, "SELECT count(*) FROM audit_outbox") == [(0,)]
    assert stack.runtime is not None
    stack.runtime.stop()
    # Handed again from a copy of the file as it was: the store keeps it once.
    redo = GatewayFile(stack.data_dir)
    redo.db.execute(
        "INSERT INTO audit_outbox (id, code, detail) VALUES (?, ?, ?)",
        (key, "capability.left", "from before"),
    )
    redo.close()
    await stack.start_runtime()
    await wait_for(
        lambda: gateway_rows(stack, "SELECT count(*) FROM audit_outbox") == [(0,)],
        30,
        "the gateway to hand the row over again",
    )
    assert len([a for a in stack.audit() if a["code"] == "capability.left"]) == 1
