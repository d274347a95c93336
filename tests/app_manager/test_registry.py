"""The app registry on a real runtime, driven by `lineup app` as a user drives it: install,
enable, update, rollback, disable and remove each end as an observable operation; tampered
bundles are refused with their code and leave the cache and the running version alone;
core apps are protected; a SIGKILL of the app manager mid-operation still ends it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kernel.conftest import RuntimeFactory

from .conftest import Apps, Bundles, start_apps


def _tampered(source: Path, into: Path) -> Path:
    """One byte of a file's content changed (an uncompressed-size-preserving flip)."""
    import zipfile

    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(into, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "app/_app.py":
                data = data.replace(b"pomodoro", b"pomodorO", 1)
            zout.writestr(info, data)
    return into


def _refusals_change_nothing(apps: Apps, bundles: Bundles, tmp_path: Path) -> None:
    """Refused bundles get a definite code each; the registry and the cache stay put."""
    before = (apps.record("pomodoro"), apps.cache_entries())
    code, out = apps.app("update", "pomodoro", _tampered(bundles.v2, tmp_path / "t.bundle"))
    assert (code, out["state"], out["code"]) == (1, "rolled_back", "bundle_hash_mismatch")
    code, out = apps.app("update", "pomodoro", bundles.untrusted)
    assert (code, out["code"]) == (1, "bundle_untrusted_key")
    code, out = apps.app("install", bundles.v1)
    assert (code, out["code"]) == (1, "already_installed")
    code, out = apps.app("update", "pomodoro", bundles.v1)  # the very bundle installed
    assert (code, out["state"], out["code"]) == (1, "rolled_back", "same_version")
    assert (apps.record("pomodoro"), apps.cache_entries()) == before

    # Only the app manager says an app is gone: anyone else's word is refused, and what the
    # store keeps of the app stays.
    apps.runtime.send("store", "store.apps.removed", {"app_scopes": ["pomodoro"]})
    apps.runtime.wait_drained("store", 10)
    assert (apps.record("pomodoro"), apps.cache_entries()) == before


def test_install_enable_update_rollback_disable_remove(
    factory: RuntimeFactory, bundles: Bundles, tmp_path: Path
) -> None:
    apps = start_apps(factory, bundles.keys)
    assert {r["app_scope"]: r["kind"] for r in apps.registry()["records"]} == {
        "app-registry": "core",
        "chat": "core",
        "settings": "core",
    }
    assert apps.registry()["settings"]["focus_stack"] == ["chat:main"]

    code, out = apps.app("install", bundles.v1)
    assert (code, out["state"], out["app_scope"]) == (0, "succeeded", "pomodoro")
    record = apps.record("pomodoro")
    assert record is not None
    assert (record["installed_version"], record["enabled"], record["kind"]) == (
        "0.1.0",
        False,
        "installed",
    )
    assert apps.cache_entries() == [record["bundle_digest"]]

    assert apps.app("enable", "pomodoro")[0] == 0
    assert apps.record("pomodoro")["enabled"] is True  # type: ignore[index]
    routing = apps.registry()["settings"]["routing"]
    assert routing["pomodoro"] == {
        "enabled": True,
        "subscriptions": ["lineup.tool.invoke"],
        "instances": [],
    }

    _refusals_change_nothing(apps, bundles, tmp_path)

    code, out = apps.app("update", "pomodoro", bundles.v2)
    assert (code, out["state"]) == (0, "succeeded")
    record = apps.record("pomodoro")
    assert (record["installed_version"], record["previous_version"]) == ("0.2.0", "0.1.0")  # type: ignore[index]
    assert len(apps.cache_entries()) == 2
    code, out = apps.app("update", "pomodoro", bundles.v1)  # back is a rollback
    assert (code, out["state"], out["code"]) == (1, "rolled_back", "older_version")
    assert apps.app("rollback", "pomodoro")[0] == 0
    record = apps.record("pomodoro")
    assert (record["installed_version"], record["previous_version"]) == ("0.1.0", "0.2.0")  # type: ignore[index]
    # A third version: the cache keeps the installed and the previous one, no older.
    assert apps.app("update", "pomodoro", bundles.v3)[0] == 0
    record = apps.record("pomodoro")
    assert (record["installed_version"], record["previous_version"]) == ("0.3.0", "0.1.0")  # type: ignore[index]
    assert sorted(apps.cache_entries()) == sorted(
        [record["bundle_digest"], record["previous_digest"]]  # type: ignore[index]
    )

    assert apps.app("disable", "pomodoro")[0] == 0
    assert apps.registry()["settings"]["routing"]["pomodoro"]["enabled"] is False
    code, out = apps.app("remove", "pomodoro")
    assert (code, out["code"]) == (1, "confirmation_required")
    private = apps.data_dir / "apps" / "pomodoro"
    private.mkdir(parents=True, exist_ok=True)
    (private / "notes.txt").write_text("the app's own data")
    code, out = apps.app("remove", "pomodoro", "--yes")
    assert (code, out["state"]) == (0, "succeeded")
    assert apps.record("pomodoro") is None
    assert apps.cache_entries() == []
    assert not private.exists()

    # Core apps: chat is the recovery app; no bundle replaces a core app.
    assert apps.app("remove", "chat", "--yes")[1]["code"] == "core_app_protected"
    assert apps.app("disable", "chat")[1]["code"] == "core_app_protected"
    assert apps.app("enable", "whiteboard")[1]["code"] == "app_not_installed"
    assert apps.runtime.status()["state"] == "running"


@pytest.mark.parametrize("point", ["app_manager.after_start", "app_manager.after_step"])
def test_an_operation_survives_a_kill_of_the_app_manager(
    factory: RuntimeFactory, bundles: Bundles, tmp_path: Path, point: str
) -> None:
    """Install, update and remove, each with the app manager SIGKILLed once at `point`:
    each completes, and the registry and the cache say exactly what a clean run says."""
    once = tmp_path / "once"
    apps = start_apps(factory, bundles.keys)
    for step, args in (
        ("install", ("install", bundles.v1)),
        ("update", ("update", "pomodoro", bundles.v2)),
        ("remove", ("remove", "pomodoro", "--yes")),
    ):
        once.mkdir(exist_ok=True)
        for marker in once.iterdir():
            marker.unlink()
        apps.runtime.stop()
        apps.runtime.start(env={"LINEUP_CRASH": f"{point}@1", "LINEUP_CRASH_ONCE_DIR": str(once)})
        apps.wait_ready()
        code, out = apps.app(*args)
        assert (code, out["state"]) == (0, "succeeded"), step
        assert (once / point).exists(), f"{step}: the crash point was not reached"
        assert apps.runtime.actors()["app_manager"]["restarts"] >= 1, step
    assert apps.record("pomodoro") is None
    assert apps.cache_entries() == []
    kinds = [(o["kind"], o["state"]) for o in apps.registry()["operations"]]
    assert kinds == [("install", "succeeded"), ("update", "succeeded"), ("remove", "succeeded")]


def test_the_app_registry_app_manages_through_the_sdk(
    factory: RuntimeFactory, bundles: Bundles
) -> None:
    """The user acts in the app-registry app (a UI action through the host); the app asks
    the app manager through the SDK; the outcome is the operation's."""
    from lineup.ui_session import UiSession
    from tests.kernel.helpers import wait_until

    apps = start_apps(factory, bundles.keys)
    ui = UiSession(apps.data_dir, session_id="terminal-r")
    ui.act({"kind": "install", "bundle": str(bundles.v1)}, app_scope="app-registry")
    ui.act({"kind": "enable", "app_scope": "pomodoro"}, app_scope="app-registry")
    ui.act({"kind": "remove", "app_scope": "chat", "confirmed": True}, app_scope="app-registry")
    ui.act({"kind": "set_default", "app_scope": "pomodoro"}, app_scope="app-registry")

    def outcomes() -> list[dict[str, object]] | None:
        actors = apps.runtime.control({"type": "actors", "stats": True})["actors"]
        registry = next(a for a in actors if a["name"] == "app.app-registry")
        found = (registry.get("statistics") or {}).get("extra", {}).get("outcomes", [])
        return found if len(found) == 4 else None

    found = wait_until(outcomes, 30, "four outcomes in the app-registry app")
    assert [(o["kind"], o["ok"], o.get("code")) for o in found] == [
        ("install", True, None),
        ("enable", True, None),
        ("remove", False, "core_app_protected"),
        ("set_default", True, None),
    ]
    record = apps.record("pomodoro")
    assert record is not None and record["enabled"] is True
    assert apps.registry()["settings"]["default_app"] == "pomodoro"
    # The app manager took these from the app-registry app, not from the user directly.
    operations = apps.registry()["operations"]
    assert [o["kind"] for o in operations][-4:] == ["install", "enable", "remove", "set_default"]
