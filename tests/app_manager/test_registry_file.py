"""The registry in the app manager's own file: whole rows replaced, finished operations
pruned to the newest ones kept, running operations never pruned; a data dir from before,
with the registry in the store's `runtime.db`, has it moved once, and the file is read
read-only by everyone else."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from actors.app_manager._db import RegistryFile
from actors.app_manager._migration import move_from_runtime_db
from actors.app_manager._registry import AppOperation, forget_finished
from actors.app_manager.registry import RegistryReader, read_apps, read_operation
from actors.kernel._own_file import WAL_KEPT_BYTES, WAL_PAGES


def _op(n: int, state: str) -> dict[str, object]:
    return {
        "operation_id": f"op-{n:03d}",
        "kind": "enable",
        "app_scope": "pomodoro",
        "state": state,
        "step": "",
        "progress": 100,
        "request": {"n": n},
        "created_ms": n,
        "updated_ms": n,
    }


def test_finished_operations_are_pruned_to_the_newest(tmp_path: Path) -> None:
    registry = RegistryFile.open(tmp_path)
    ops = [_op(n, "running" if n == 2 else "succeeded") for n in range(10)]
    registry.write({"operations": ops})
    registry.write({"keep_operations": 3})
    kept = [(o["operation_id"], o["state"]) for o in registry.load()["operations"]]
    assert kept == [
        ("op-002", "running"),
        ("op-007", "succeeded"),
        ("op-008", "succeeded"),
        ("op-009", "succeeded"),
    ]
    registry.write({"operations": [{**ops[9], "state": "failed", "code": "x"}]})
    assert registry.load()["operations"][-1]["request"] == {"n": 9}
    assert read_operation(tmp_path, "op-009") == {**registry.load()["operations"][-1]}
    assert read_operation(tmp_path, "op-001") is None


def test_the_actor_forgets_its_oldest_finished_operations_past_a_slack() -> None:
    """As the app manager runs, its finished operations stay near the newest kept: the
    oldest go once `slack` more have finished, a running one whatever its age."""
    ops = {"op-000": AppOperation.from_row(_op(0, "running"))}
    forgot_at = []
    for n in range(1, 14):
        ops[f"op-{n:03d}"] = AppOperation.from_row(_op(n, "succeeded"))
        if forget_finished(ops, keep=5, slack=3):
            forgot_at.append(n)
    assert forgot_at == [9, 13]
    assert list(ops) == ["op-000"] + [f"op-{n:03d}" for n in range(9, 14)]


def test_a_step_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    registry = RegistryFile.open(tmp_path)
    registry.write({"settings": {"default_app": "chat"}})
    # The operation is written before the setting that cannot be: the step is undone whole.
    bad = {"operations": [_op(1, "running")], "settings": {"default_app": object()}}
    try:
        registry.write(bad)
    except TypeError:
        pass
    else:
        raise AssertionError("a row that cannot be written was written")
    assert registry.load()["operations"] == []
    assert registry.load()["settings"] == {"default_app": "chat"}


def test_readers_see_what_was_committed_and_when_it_changed(tmp_path: Path) -> None:
    assert read_apps(tmp_path) == {"records": [], "operations": [], "instances": [], "settings": {}}
    reader = RegistryReader(tmp_path)
    assert reader.live_instances("pomodoro") == [] and not reader.changed()
    registry = RegistryFile.open(tmp_path)
    instance = {"instance_id": "pomodoro:c1", "app_scope": "pomodoro", "conversation_id": "c1"}
    registry.write({"instances": [{**instance, "state": "active", "updated_ms": 1}]})
    assert reader.changed() and not reader.changed()
    assert reader.live_instances("pomodoro") == [("pomodoro:c1", "c1")]
    registry.write({"instances": [{**instance, "state": "closed", "updated_ms": 2}]})
    assert reader.changed()
    assert reader.live_instances("pomodoro") == []
    reader.close()


def _an_older_runtime_db(data_dir: Path) -> None:
    """The registry as the store kept it in `runtime.db` before the app manager had a file."""
    with closing(sqlite3.connect(data_dir / "runtime.db")) as db, db:
        db.execute(
            "CREATE TABLE app_records (app_scope TEXT PRIMARY KEY, kind TEXT, name TEXT,"
            " installed_version TEXT, previous_version TEXT, enabled INTEGER,"
            " install_state TEXT, active_instance_count INTEGER, installed_at_ms INTEGER,"
            " enabled_at_ms INTEGER, bundle_digest TEXT, previous_digest TEXT, manifest TEXT)"
        )
        db.execute("CREATE TABLE app_settings (name TEXT PRIMARY KEY, value TEXT)")
        db.execute(
            "INSERT INTO app_records (app_scope, kind, installed_version, enabled,"
            " install_state, manifest) VALUES ('pomodoro', 'installed', '1.0.0', 1,"
            " 'installed', ?)",
            (json.dumps({"app_scope": "pomodoro", "title": "Pomodoro"}),),
        )
        db.execute(
            "INSERT INTO app_settings VALUES ('focus_stack', ?)", (json.dumps(["chat:main"]),)
        )


def test_an_older_data_dirs_registry_moves_once(tmp_path: Path) -> None:
    _an_older_runtime_db(tmp_path)
    registry = RegistryFile.open(tmp_path)
    assert move_from_runtime_db(registry.db, tmp_path) == {"app_records": 1, "app_settings": 1}
    assert move_from_runtime_db(registry.db, tmp_path) is None  # once per data dir
    apps = read_apps(tmp_path)
    assert [(r["app_scope"], r["enabled"]) for r in apps["records"]] == [("pomodoro", True)]
    assert apps["records"][0]["manifest"]["title"] == "Pomodoro"
    assert apps["settings"] == {"focus_stack": ["chat:main"]}
    # The store's file was only read.
    with closing(sqlite3.connect(f"file:{tmp_path / 'runtime.db'}?mode=ro", uri=True)) as db:
        assert db.execute("SELECT count(*) FROM app_records").fetchone() == (1,)


def test_the_wal_stays_near_its_bound(tmp_path: Path) -> None:
    registry = RegistryFile.open(tmp_path)
    manifest = {"title": "Big", "notes": "x" * 200_000}
    sizes = []
    for n in range(24):  # each step writes a record with a large manifest: 5 MiB in all
        record = {"app_scope": f"app{n}", "kind": "installed", "manifest": manifest}
        registry.write({"records": [record]})
        sizes.append((tmp_path / "app_manager.db-wal").stat().st_size)
    # Copied back every `WAL_PAGES` pages, kept to `WAL_KEPT_BYTES` when it starts over:
    # one step past the bound at most, however much was written.
    assert max(sizes) <= WAL_PAGES * 4096 + 300_000, sizes
    assert sizes[-1] <= WAL_KEPT_BYTES + 300_000, sizes
    assert len(read_apps(tmp_path)["records"]) == 24


def test_a_page_reads_only_the_operations_it_shows_and_the_live_instances(
    tmp_path: Path,
) -> None:
    """The registry keeps a hundred of each; a reader that looks at every change reads the
    newest operations it shows (never a listing) and the live instances only."""
    registry = RegistryFile.open(tmp_path)
    ops = [_op(n, "succeeded") for n in range(8)]
    ops[6]["kind"] = "list"
    instance = {"app_scope": "pomodoro", "conversation_id": "c", "mode": "background"}
    instances = [
        {
            **instance,
            "instance_id": f"pomodoro:{n}",
            "state": state,
            "created_ms": n,
            "updated_ms": n,
        }
        for n, state in enumerate(("closed", "active", "failed", "backgrounded"))
    ]
    registry.write({"operations": ops, "instances": instances})
    reader = RegistryReader(tmp_path)
    shown = reader.apps(operations=3, ended=False)
    assert [o["operation_id"] for o in shown["operations"]] == ["op-004", "op-005", "op-007"]
    assert [i["instance_id"] for i in shown["instances"]] == ["pomodoro:1", "pomodoro:3"]
    whole = reader.apps()
    assert len(whole["operations"]) == 8 and len(whole["instances"]) == 4
    reader.close()
