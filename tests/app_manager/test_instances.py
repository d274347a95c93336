"""Installed apps as isolated processes under the app manager: launch puts an instance in
front and the previous one in the background; focus and close move it back; disable and
remove wind the process down; a process killed past its restart intensity fails its
instance and gives the foreground back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.kernel.conftest import RuntimeFactory
from tests.kernel.helpers import wait_until

from .conftest import Apps, Bundles, start_apps


def _instances(apps: Apps) -> dict[str, tuple[str, str]]:
    return {i["instance_id"]: (i["state"], i["mode"]) for i in apps.registry()["instances"]}


def _stats(apps: Apps, name: str) -> dict[str, Any]:
    actors = apps.runtime.control({"type": "actors", "stats": True})["actors"]
    record = next(a for a in actors if a["name"] == name)
    return dict(record.get("statistics") or {})


def _installed(factory: RuntimeFactory, bundles: Bundles, **config: Any) -> Apps:
    apps = start_apps(factory, bundles.keys, **config)
    assert apps.app("install", bundles.v1)[0] == 0
    assert apps.app("enable", "pomodoro")[0] == 0
    return apps


def test_launch_background_foreground_close(factory: RuntimeFactory, bundles: Bundles) -> None:
    apps = _installed(factory, bundles)
    code, out = apps.app("launch", "pomodoro", "--conversation", "conv-1")
    assert (code, out["result"]) == (0, {"instance_id": "pomodoro:conv-1"})
    assert apps.registry()["settings"]["focus_stack"] == ["chat:main", "pomodoro:conv-1"]
    assert _instances(apps) == {
        "chat:main": ("backgrounded", "background"),
        "pomodoro:conv-1": ("active", "foreground"),
    }
    actor = apps.runtime.actors()["app.pomodoro"]
    assert actor["state"] == "running"
    assert apps.record("pomodoro")["active_instance_count"] == 1  # type: ignore[index]
    stats = _stats(apps, "app.pomodoro")
    assert stats["isolation"]["level"] == "full"
    hooks = wait_until(
        lambda: _stats(apps, "app.pomodoro")["extra"]["instances"].get("pomodoro:conv-1"),
        10,
        "the start and foreground hooks in the app",
    )
    assert (hooks["mode"], hooks["last_hook"]) == ("foreground", "foreground")
    chat = _stats(apps, "app.chat")["extra"]["instances"]["chat:main"]
    assert (chat["mode"], chat["last_hook"]) == ("background", "background")

    assert apps.app("focus", "chat:main")[0] == 0
    assert _instances(apps)["pomodoro:conv-1"] == ("backgrounded", "background")
    assert _instances(apps)["chat:main"] == ("active", "foreground")
    assert apps.app("focus", "pomodoro:conv-1")[0] == 0
    assert apps.registry()["settings"]["focus_stack"] == ["chat:main", "pomodoro:conv-1"]

    # A second app process for another conversation is the same process, another instance.
    assert apps.app("launch", "pomodoro", "--conversation", "conv-2")[0] == 0
    assert apps.app("close", "pomodoro:conv-2")[0] == 0
    assert apps.registry()["settings"]["focus_stack"] == ["chat:main", "pomodoro:conv-1"]
    assert apps.app("close", "pomodoro:conv-1")[0] == 0
    assert _instances(apps)["chat:main"] == ("active", "foreground")
    assert "app.pomodoro" not in apps.runtime.actors()  # no instance left: no process
    assert apps.record("pomodoro")["active_instance_count"] == 0  # type: ignore[index]

    assert apps.app("launch", "pomodoro", "--conversation", "conv-1")[0] == 0
    assert apps.app("disable", "pomodoro")[0] == 0
    assert "app.pomodoro" not in apps.runtime.actors()
    assert _instances(apps)["pomodoro:conv-1"] == ("closed", "background")
    code, out = apps.app("launch", "pomodoro", "--conversation", "conv-1")
    assert (code, out["code"]) == (1, "app_disabled")
    assert apps.app("remove", "pomodoro", "--yes")[0] == 0
    code, out = apps.app("launch", "pomodoro")
    assert (code, out["code"]) == (1, "app_not_installed")
    assert apps.registry()["settings"]["focus_stack"] == ["chat:main"]


def test_the_focus_stack_survives_a_restart(factory: RuntimeFactory, bundles: Bundles) -> None:
    apps = _installed(factory, bundles)
    assert apps.app("launch", "pomodoro", "--conversation", "conv-1")[0] == 0
    first_pid = apps.runtime.actors()["app.pomodoro"]["pid"]
    apps.runtime.stop()
    apps.runtime.start()
    apps.wait_ready()
    running = wait_until(
        lambda: apps.runtime.actors().get("app.pomodoro", {}).get("state") == "running",
        30,
        "the app's process to come back",
    )
    assert running
    assert apps.runtime.actors()["app.pomodoro"]["pid"] != first_pid
    assert apps.registry()["settings"]["focus_stack"] == ["chat:main", "pomodoro:conv-1"]
    assert _instances(apps)["pomodoro:conv-1"] == ("active", "foreground")


def test_an_app_killed_past_its_intensity_fails_and_gives_back_the_front(
    factory: RuntimeFactory, bundles: Bundles
) -> None:
    apps = _installed(factory, bundles, max_restarts=2, max_seconds=30.0)
    assert apps.app("launch", "pomodoro", "--conversation", "conv-1")[0] == 0
    pid = apps.runtime.actors()["app.pomodoro"]["pid"]
    apps.runtime.control({"type": "kill", "name": "app.pomodoro"})

    def restarted() -> int | None:
        actor = apps.runtime.actors()["app.pomodoro"]
        return actor["pid"] if actor["state"] == "running" and actor["pid"] != pid else None

    wait_until(restarted, 20, "a restart of the app's process")
    assert _instances(apps)["pomodoro:conv-1"] == ("active", "foreground")  # restarted, kept
    assert _stats(apps, "app.pomodoro")["isolation"]["level"] == "full"  # still jailed

    for _ in range(2):  # the third restart within max_seconds is one too many
        wait_until(restarted, 20, "the app's process")
        pid = apps.runtime.actors()["app.pomodoro"]["pid"]
        apps.runtime.control({"type": "kill", "name": "app.pomodoro"})
    # The supervisor gives up on it; the app manager removes the failed child.
    wait_until(lambda: "app.pomodoro" not in apps.runtime.actors(), 20, "the failed child gone")
    wait_until(
        lambda: _instances(apps)["pomodoro:conv-1"][0] == "failed", 20, "the instance to fail"
    )
    assert _instances(apps)["chat:main"] == ("active", "foreground")
    assert apps.registry()["settings"]["focus_stack"] == ["chat:main"]
    wait_until(lambda: apps.runtime.status()["state"] == "running", 20, "not degraded")


def test_host_intents_open_and_close_apps(factory: RuntimeFactory, bundles: Bundles) -> None:
    """The host's lifecycle intents (the third entry kind) open and close apps."""
    from lineup.ui_session import UiSession

    apps = _installed(factory, bundles)
    ui = UiSession(apps.data_dir, session_id="terminal-i")
    ui.intent("open_app", app_scope="pomodoro")
    wait_until(
        lambda: _instances(apps).get("pomodoro:main") == ("active", "foreground"), 30, "open"
    )
    assert apps.runtime.actors()["app.pomodoro"]["state"] == "running"
    ui.intent("close_app", app_scope="pomodoro")
    wait_until(lambda: _instances(apps)["pomodoro:main"][0] == "closed", 30, "close")
    assert _instances(apps)["chat:main"] == ("active", "foreground")
    ui.intent("open_app", app_scope="whiteboard")  # not installed: a failed operation
    wait_until(
        lambda: any(
            o["kind"] == "launch" and o["code"] == "app_not_installed"
            for o in apps.registry()["operations"]
        ),
        30,
        "the refused launch",
    )


def test_a_crash_mid_update_keeps_the_app_in_front(
    factory: RuntimeFactory, bundles: Bundles, tmp_path: Path
) -> None:
    """The start-up target is chosen once per run of the runtime: when only the app
    manager restarts (here in the middle of an update, the app marked `updating`), the
    foreground stays where the user left it, and the update ends on the new version."""
    apps = _installed(factory, bundles)
    assert apps.app("launch", "pomodoro", "--conversation", "conv-1")[0] == 0
    once = tmp_path / "once"
    once.mkdir()
    apps.runtime.stop()
    crash = {"LINEUP_CRASH": "app_manager.after_start@1", "LINEUP_CRASH_ONCE_DIR": str(once)}
    apps.runtime.start(env=crash)
    apps.wait_ready()
    code, out = apps.app("update", "pomodoro", bundles.v2)
    assert (code, out["state"]) == (0, "succeeded")
    assert (once / "app_manager.after_start").exists()
    assert apps.runtime.actors()["app_manager"]["restarts"] >= 1
    assert apps.registry()["settings"]["focus_stack"] == ["chat:main", "pomodoro:conv-1"]
    assert _instances(apps)["pomodoro:conv-1"] == ("active", "foreground")
    assert apps.record("pomodoro")["installed_version"] == "0.2.0"  # type: ignore[index]


def test_a_cached_bundle_is_checked_again_before_it_runs(
    factory: RuntimeFactory, bundles: Bundles
) -> None:
    """Trust may change after an install, and a cache entry may be tampered with on disk:
    either way the app does not start, with the check's code, and nothing moves in front."""
    apps = _installed(factory, bundles)
    digest = apps.record("pomodoro")["bundle_digest"]  # type: ignore[index]
    code_file = apps.data_dir / "bundles" / digest / "app" / "_app.py"
    original = code_file.read_bytes()
    code_file.chmod(0o644)
    code_file.write_bytes(original.replace(b"pomodoro", b"pomodorO", 1))
    code, out = apps.app("launch", "pomodoro", "--conversation", "conv-1")
    assert (code, out["code"]) == (1, "bundle_hash_mismatch")
    code_file.write_bytes(original)

    (apps.data_dir / "trusted_keys" / "publisher.pub").unlink()
    code, out = apps.app("launch", "pomodoro", "--conversation", "conv-1")
    assert (code, out["code"]) == (1, "bundle_untrusted_key")
    assert "app.pomodoro" not in apps.runtime.actors()
    assert apps.registry()["settings"]["focus_stack"] == ["chat:main"]
    assert _instances(apps)["chat:main"] == ("active", "foreground")
