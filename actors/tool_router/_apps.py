"""The tool router's view of the apps, from the registry's rows.

The app manager sends it whenever the registry or the instances change (`tool_router.apps`,
the same shape as `registry.read_apps`, which the tool router reads when it starts):
records (an installed app's verified manifest; a core app's is the one its code declares),
live instances, the focus stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.app_manager.registry import LIVE_STATES

from ._inventory import AppView


def _views(
    records: list[dict[str, Any]],
    instances: list[dict[str, Any]],
    core: Mapping[str, Mapping[str, Any]],
) -> dict[str, AppView]:
    live: dict[str, dict[str, tuple[str | None, str]]] = {}
    for row in instances:
        if row.get("state") in LIVE_STATES:
            live.setdefault(row["app_scope"], {})[row["instance_id"]] = (
                row.get("conversation_id"),
                str(row.get("mode") or "background"),
            )
    views = {}
    for record in records:
        scope = record["app_scope"]
        manifest = core.get(scope) if record.get("kind") == "core" else record.get("manifest")
        views[scope] = AppView(
            app_scope=scope,
            version=str(record.get("installed_version") or ""),
            enabled=bool(record.get("enabled")),
            installed=record.get("install_state") in ("installed", "updating"),
            manifest=manifest or {},
            instances=live.get(scope, {}),
        )
    return views


def app_views(
    registry: Mapping[str, Any], core: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, AppView], str | None]:
    """The apps, and the foreground instance, from the registry's rows."""
    stack = registry.get("settings", {}).get("focus_stack") or []
    views = _views(registry.get("records", []), registry.get("instances", []), core)
    return views, (stack[-1] if stack else None)
