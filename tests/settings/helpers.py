"""What the settings tests do and read: `lineup settings` as the user runs it, the settings
app as a UI drives it (a UI action through the host, its outcome in its statistics), and
the runtime's own record (runtime.db, read-only) to hold both to."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import trio

from actors.kernel import control_request, new_id
from lineup.ui_session import UiSession
from tests.app_manager.conftest import lineup
from tests.runtime.helpers import wait_for

KEEPER = "keeper"


async def settings(data_dir: Path, *args: str | Path) -> tuple[int, str, str]:
    """`lineup settings ARGS` on a worker thread (the AppServer runs in this process)."""
    return await trio.to_thread.run_sync(lambda: lineup("settings", *args, "--data-dir", data_dir))


async def settings_json(data_dir: Path, *args: str | Path) -> Any:
    code, out, err = await settings(data_dir, *args, "--json")
    assert code == 0, f"lineup settings {args}: {out} {err}"
    return json.loads(out)


async def lineup_app(data_dir: Path, *args: str | Path) -> None:
    code, out, err = await trio.to_thread.run_sync(
        lambda: lineup("app", *args, "--data-dir", data_dir)
    )
    assert code == 0, f"lineup app {args}: {out} {err}"


async def install_keeper(data_dir: Path, bundle: tuple[Path, Path]) -> None:
    path, key = bundle
    (data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(key, data_dir / "trusted_keys")
    await lineup_app(data_dir, "install", path)
    await lineup_app(data_dir, "enable", KEEPER)


def kept(data_dir: Path) -> dict[str, Any] | None:
    """What the keeper says it kept, once all of it is stored."""
    path = data_dir / "apps" / KEEPER / "kept.json"
    return json.loads(path.read_text()) if path.exists() else None


def rows(data_dir: Path, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    path = data_dir / "runtime.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        return db.execute(query, params).fetchall()


def settings_statistics(data_dir: Path) -> dict[str, Any]:
    actors = control_request(data_dir, {"type": "actors", "stats": True}, timeout=10)["actors"]
    found = next(a for a in actors if a["name"] == "app.settings")
    return dict((found.get("statistics") or {}).get("extra") or {})


class SettingsUi:
    """The user in the settings app: each input through the host, as a UI sends it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.ui = UiSession(data_dir, session_id="settings-test")

    async def act(self, kind: str, **fields: Any) -> dict[str, Any]:
        """The input's outcome, once the settings app has kept it."""
        input_id = new_id()
        action = {"kind": kind, "input_id": input_id, **fields}
        await trio.to_thread.run_sync(lambda: self.ui.act(action, app_scope="settings"))

        def outcome() -> dict[str, Any] | None:
            found = settings_statistics(self.data_dir).get("outcomes", [])
            return next((o for o in found if o.get("input_id") == input_id), None)

        return await wait_for(outcome, 30, f"the settings app's outcome of {kind}")

    def view(self) -> dict[str, Any]:
        return dict(settings_statistics(self.data_dir).get("view") or {})
