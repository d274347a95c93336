"""`app_manager.db`: the app manager's own state, beside the mailbox.

- `app_records` (`app_scope`): each installed app, its versions, signers and manifest;
- `app_operations` (`operation_id`): every request as an operation, the newest finished
  ones kept (`keep_operations`);
- `app_instances` (`instance_id`): every instance and its state;
- `app_settings` (`name`): the focus stack, the default app, the router's view of the apps
  (`routing`), the run that last chose the start-up target (`boot`) and the version of
  the tool router's view last committed (`view_version`: `registry.view_version`);
- `registry_state` (`name`): `moved_from_runtime_db`, once an older data dir's rows were
  copied in (`_migration`).

Only the app manager writes it, one step a transaction (`RegistryFile.write`: whole rows
replaced, rows removed, settings set), at `synchronous=FULL` whatever the mailbox's setting:
its steps are few (an operation's two or three), and "the record now says 1.1.0" must
outlive a power cut once the operation is seen to end. Its WAL stays near a mebibyte
(the kernel's `bound_wal`). Every other reader opens it
read-only (`registry`): the command line, the web host, and the actors that judge by the
registry as it is now.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Final

from actors.kernel import bound_wal

from ._rows import INSTANCE_COLUMNS, OPERATION_COLUMNS, RECORD_COLUMNS, load_apps, row_values

DB_FILE: Final = "app_manager.db"

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS app_records (
    app_scope TEXT PRIMARY KEY, kind TEXT, name TEXT, installed_version TEXT,
    previous_version TEXT, enabled INTEGER, install_state TEXT, active_instance_count INTEGER,
    installed_at_ms INTEGER, enabled_at_ms INTEGER, bundle_digest TEXT, previous_digest TEXT,
    manifest TEXT
);
CREATE TABLE IF NOT EXISTS app_operations (
    operation_id TEXT PRIMARY KEY, kind TEXT, app_scope TEXT, state TEXT, step TEXT,
    progress INTEGER, code TEXT, detail TEXT, request TEXT, created_ms INTEGER,
    updated_ms INTEGER
);
CREATE TABLE IF NOT EXISTS app_instances (
    instance_id TEXT PRIMARY KEY, app_scope TEXT, conversation_id TEXT, state TEXT, mode TEXT,
    created_ms INTEGER, updated_ms INTEGER
);
CREATE TABLE IF NOT EXISTS app_settings (name TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS registry_state (name TEXT PRIMARY KEY, value INTEGER);
"""

_FINISHED: Final = "state IN ('succeeded', 'failed', 'rolled_back')"


def db_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / DB_FILE


def _replace(db: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: list[Any]) -> None:
    if rows:
        marks = ", ".join("?" * len(columns))
        db.executemany(
            f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) VALUES ({marks})",
            [row_values(columns, row) for row in rows],
        )


class RegistryFile:
    """The app manager's connection to its file; one writer, in the actor's own thread."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    @classmethod
    def open(cls, data_dir: str | Path) -> RegistryFile:
        path = db_path(data_dir)
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        bound_wal(db)  # a step or two of an install with a large manifest, at most
        db.executescript(_SCHEMA)
        return cls(db)

    def load(self) -> dict[str, Any]:
        """Everything the app manager rebuilds its state from."""
        return load_apps(self.db)

    def write(self, body: dict[str, Any]) -> None:
        """One step: rows replaced whole (`records`, `operations`, `instances`), rows
        removed (`remove_records`, `remove_instances`), the oldest finished operations
        beyond `keep_operations` dropped, `settings` set; all of it or none."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            _replace(db, "app_records", RECORD_COLUMNS, list(body.get("records", ())))
            _replace(db, "app_operations", OPERATION_COLUMNS, list(body.get("operations", ())))
            _replace(db, "app_instances", INSTANCE_COLUMNS, list(body.get("instances", ())))
            for scope in body.get("remove_records", ()):
                db.execute("DELETE FROM app_records WHERE app_scope = ?", (scope,))
            for instance in body.get("remove_instances", ()):
                db.execute("DELETE FROM app_instances WHERE instance_id = ?", (instance,))
            keep = body.get("keep_operations")
            if isinstance(keep, int) and keep >= 0:  # the oldest finished ones go first
                db.execute(
                    f"DELETE FROM app_operations WHERE {_FINISHED} AND operation_id NOT IN"
                    f" (SELECT operation_id FROM app_operations WHERE {_FINISHED}"
                    " ORDER BY created_ms DESC, rowid DESC LIMIT ?)",
                    (keep,),
                )
            for name, value in dict(body.get("settings", {})).items():
                db.execute(
                    "INSERT OR REPLACE INTO app_settings (name, value) VALUES (?, ?)",
                    (name, json.dumps(value, separators=(",", ":"))),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.db.close()
