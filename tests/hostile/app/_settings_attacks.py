"""The hostile app's attacks on the settings: it sends the types only the settings app may
send (the store's overview of every app's data, the tool policy seen and replaced, the
grants listed and revoked), past the SDK and through it, and asks the settings app itself
to do it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from actors.kernel import CallFailed

if TYPE_CHECKING:
    from ._app import HostileApp

WIDE_OPEN = {"allow": ["hostile/*"], "deny": []}


async def reach_settings(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    revoke = {"app_scope": "chat", "capability": "notification.show"}
    outcomes = {
        "overview": await app.attempt("store", "store.app_data.overview", {}),
        "policy": await app.attempt("tool_router", "tool_router.policy.get", {}),
        "replace policy": await app.attempt(
            "tool_router", "tool_router.policy.replace", {"policy": WIDE_OPEN}
        ),
        "grants": await app.attempt("capability_gateway", "capability_gateway.grants", {}),
        "revoke": await app.attempt("capability_gateway", "capability_gateway.revoke", revoke),
        "as the user": await app.attempt(
            "app.settings", "app.input", {"kind": "set_policy", "policy": WIDE_OPEN}
        ),
    }
    asks: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("sdk: replace policy", lambda: app.sdk.settings.replace_policy(WIDE_OPEN)),
        ("sdk: app data", app.sdk.settings.app_data),
        ("sdk: set default", lambda: app.sdk.apps.request("set_default", app_scope="hostile")),
    ]
    for label, ask in asks:
        try:
            outcomes[label] = f"accepted:{await ask()}"
        except CallFailed as exc:
            outcomes[label] = f"refused:{exc.code}"
    return {"outcomes": outcomes}
