"""What the gateway needs to know of the requesting app, from the registry's rows (the app
manager's file, read for each request so that it is never stale): its manifest's
capabilities and title, whether it is enabled, whether it is in the foreground, and the
conversation its consent card belongs in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from actors.app_manager.registry import LIVE_STATES
from contracts import RUNTIME_GLOBAL_CONVERSATION


@dataclass(frozen=True)
class AppFacts:
    installed: bool
    enabled: bool
    capabilities: frozenset[str]
    foreground: bool
    conversation_id: str
    title: str


def app_facts(
    registry: Mapping[str, Any], app_scope: str, core: Mapping[str, Mapping[str, Any]]
) -> AppFacts:
    """The facts of `app_scope` (a core app's manifest is the one its code declares)."""
    record = next((r for r in registry.get("records", []) if r["app_scope"] == app_scope), None)
    if record is None:
        return AppFacts(False, False, frozenset(), False, RUNTIME_GLOBAL_CONVERSATION, app_scope)
    manifest = core.get(app_scope) if record.get("kind") == "core" else record.get("manifest")
    stack = (registry.get("settings") or {}).get("focus_stack") or []
    live = sorted(
        (
            row
            for row in registry.get("instances", [])
            if row.get("app_scope") == app_scope and row.get("state") in LIVE_STATES
        ),
        key=lambda row: int(row.get("updated_ms") or 0),
    )
    top = next((row for row in live if stack and row["instance_id"] == stack[-1]), None)
    # The card goes where the user sees the app: its foreground instance's conversation,
    # else the one it was last active in, else the runtime's own.
    shown = top or (live[-1] if live else None)
    return AppFacts(
        installed=record.get("install_state") in ("installed", "updating"),
        enabled=bool(record.get("enabled")),
        capabilities=frozenset((manifest or {}).get("capabilities") or ()),
        foreground=top is not None,
        conversation_id=str((shown or {}).get("conversation_id") or RUNTIME_GLOBAL_CONVERSATION),
        title=str((manifest or {}).get("title") or app_scope),
    )
