"""The registry's rows in runtime.db: whole rows replaced, finished operations pruned to
the newest ones kept, running operations never pruned."""

from __future__ import annotations

from pathlib import Path

from actors.store._apps import load_apps, write_apps
from actors.store._schema import open_db


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
    db = open_db(tmp_path)
    ops = [_op(n, "running" if n == 2 else "succeeded") for n in range(10)]
    write_apps(db, {"operations": ops})
    write_apps(db, {"keep_operations": 3})
    kept = [(o["operation_id"], o["state"]) for o in load_apps(db)["operations"]]
    assert kept == [
        ("op-002", "running"),
        ("op-007", "succeeded"),
        ("op-008", "succeeded"),
        ("op-009", "succeeded"),
    ]
    write_apps(db, {"operations": [{**ops[9], "state": "failed", "code": "x"}]})
    assert load_apps(db)["operations"][-1]["request"] == {"n": 9}
    assert load_apps(db)["operations"][-1]["code"] == "x"
