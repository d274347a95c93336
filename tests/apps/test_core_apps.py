"""The core apps are declared like any app, and every list of them derives from that."""

from __future__ import annotations

from actors import runtime_children
from apps.sdk import manifest_of
from contracts import CORE_APP_SCOPES


def test_each_core_app_is_declared_as_a_core_app() -> None:
    for app in runtime_children.CORE_APPS:
        manifest = manifest_of(app)
        assert app.app_kind == "core"
        assert runtime_children.CORE_MANIFESTS[manifest["app_scope"]] == manifest
    assert set(runtime_children.CORE_MANIFESTS) == {"chat", "app-registry", "settings"}


def test_the_lists_of_core_apps_are_the_declared_ones() -> None:
    scopes = set(runtime_children.CORE_MANIFESTS)
    # A bundle is checked without the runtime: the contracts keep the scopes it may not take.
    assert scopes == CORE_APP_SCOPES
    config = runtime_children.default_config("/tmp/lineup-core-apps")
    children = {child.name: child for child in config.children}
    assert {name for name in children if name.startswith("app.")} == {f"app.{s}" for s in scopes}
    assert set(children["host"].config["ui_apps"]) == scopes
    core = children["app_manager"].config["core_apps"]
    assert {manifest["app_scope"] for manifest in core} == scopes


def test_the_chat_subscriptions_come_from_its_declaration() -> None:
    declared = [s["type"] for s in runtime_children.CORE_MANIFESTS["chat"]["agent_subscriptions"]]
    assert declared == [
        "lineup.message",
        "lineup.task.progress",
        "lineup.interaction.request",
        "lineup.interaction.withdraw",
    ]
    config = runtime_children.default_config()
    router = next(child for child in config.children if child.name == "router")
    assert router.config["apps"]["chat"]["subscriptions"] == declared
    assert router.config["apps"]["app-registry"]["subscriptions"] == []
