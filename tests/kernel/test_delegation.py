"""Dynamic children on an actor's behalf (`Actor.supervise`): only the runtime's app
supervisor may ask, only for `app.*` names that are not static children, and only jailed
in their own scope's directory; starting a running child and stopping an absent one are
idempotent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import MakeRuntime
from .helpers import child, target, wait_until


def _outcomes(path: Path, count: int) -> list[dict[str, Any]]:
    def read() -> list[dict[str, Any]] | None:
        if not path.exists():
            return None
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        return lines if len(lines) >= count else None

    return wait_until(read, 30, f"{count} outcomes")


def test_only_the_app_supervisor_starts_app_children(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    boss_out, other_out = tmp_path / "boss.jsonl", tmp_path / "other.jsonl"
    config = {
        "app_supervisor": "boss",
        "children": [
            child("boss", "Delegator", config={"out": str(boss_out)}),
            child("other", "Delegator", config={"out": str(other_out)}),
            child("echo", "Echo"),
        ],
    }
    runtime = make_runtime(config).start()
    app = {"name": "app.echo", "target": target("Echo"), "isolation": {"private_dir": "apps/echo"}}
    runtime.send("boss", "delegate", {"op": "start", "spec": app})
    runtime.send("boss", "delegate", {"op": "start", "spec": app})  # already running
    runtime.send("other", "delegate", {"op": "start", "spec": {**app, "name": "app.x"}})
    runtime.send("boss", "delegate", {"op": "start", "spec": {**app, "name": "echo2"}})
    runtime.send("boss", "delegate", {"op": "stop", "name": "echo"})  # a static child
    runtime.send("boss", "delegate", {"op": "start", "spec": {"name": "app.bad"}})
    unjailed = {"name": "app.free", "target": target("Echo")}
    runtime.send("boss", "delegate", {"op": "start", "spec": unjailed})
    assert _outcomes(boss_out, 6) == [
        {"ok": True, "state": "running"},
        {"ok": True, "state": "running"},
        {"ok": False, "code": "not_permitted"},
        {"ok": False, "code": "not_permitted"},
        {"ok": False, "code": "invalid_spec"},
        {"ok": False, "code": "not_permitted"},
    ]
    assert _outcomes(other_out, 1) == [{"ok": False, "code": "not_permitted"}]
    actors = runtime.actors()
    assert actors["app.echo"]["state"] == "running"
    assert "app.x" not in actors and "echo2" not in actors and "app.free" not in actors
    assert actors["echo"]["state"] == "running"

    runtime.send("boss", "delegate", {"op": "stop", "name": "app.echo"})
    runtime.send("boss", "delegate", {"op": "stop", "name": "app.echo"})  # already gone
    assert _outcomes(boss_out, 8)[6:] == [
        {"ok": True, "state": "stopped"},
        {"ok": True, "state": "stopped"},
    ]
    assert "app.echo" not in runtime.actors()
