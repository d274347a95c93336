"""`sdk.settings`: what the settings app asks of the runtime, each fact from its owner.

- `grants()` / `revoke(app_scope, capability)`: the user's capability grants, kept by the
  capability gateway;
- `policy()` / `replace_policy(policy)`: the tool policy and each tool's visibility, kept by
  the tool router, which checks a new policy and refuses a broken one (`CallFailed`);
- `default_app()`: the user's default app, kept by the app manager (chosen with
  `sdk.apps.request("set_default", app_scope=...)`);
- `app_data()`: each app's session data, artifacts and diagnostics, and the rule for how
  long they stay, read by the store;
- `default_mode(mode=None)`: the mode a new conversation starts in (`im`, `audio`), kept
  by the chat app; with `mode`, it becomes the setting.

Every one is a request its owner's door admits from the settings app only: for any other
app the runtime refuses it (`sender_not_allowed`) before anything is stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ._navigation import _request

if TYPE_CHECKING:
    from ._app_core import AppCore

GATEWAY: Final = "capability_gateway"
CHAT: Final = "app.chat"
TOOL_ROUTER: Final = "tool_router"
STORE: Final = "store"
TIMEOUT: Final = 30.0


class SettingsAPI:
    def __init__(self, app: AppCore) -> None:
        self._app = app

    async def _ask(self, to: str, type_: str, body: dict[str, Any]) -> dict[str, Any]:
        # Inside a handler the id derives from the message handled: a replay asks the same.
        app = self._app
        reply = await app.call(to, type_, body, timeout=TIMEOUT, id=app._ids.next())
        return dict(reply or {})

    async def grants(self) -> list[dict[str, Any]]:
        """The grants in force: {app_scope, capability, scope, granted_ms} each."""
        reply = await self._ask(GATEWAY, "capability_gateway.grants", {})
        return [dict(row) for row in reply.get("grants", [])]

    async def revoke(self, app_scope: str, capability: str) -> dict[str, Any]:
        """Take back a grant; the gateway's answer (how many it removed)."""
        body = {"app_scope": app_scope, "capability": capability}
        return await self._ask(GATEWAY, "capability_gateway.revoke", body)

    async def policy(self) -> dict[str, Any]:
        """The tool policy (`policy`, `broken`) and per conversation each tool's visibility."""
        return await self._ask(TOOL_ROUTER, "tool_router.policy.get", {})

    async def replace_policy(self, policy: dict[str, Any]) -> dict[str, Any]:
        """Put `policy` in force; the inventory revisions after it."""
        return await self._ask(TOOL_ROUTER, "tool_router.policy.replace", {"policy": policy})

    async def default_app(self) -> str | None:
        value = (await _request(self._app, {"kind": "list"})).get("default_app")
        return None if value is None else str(value)

    async def app_data(self) -> dict[str, Any]:
        """`apps` (each app's data) and `retention` (how long it stays)."""
        return await self._ask(STORE, "store.app_data.overview", {})

    async def default_mode(self, mode: str | None = None) -> str:
        """The mode a new conversation starts in; set to `mode` first when it is given."""
        body = {} if mode is None else {"default_mode": mode}
        reply = await self._ask(CHAT, "app.interaction.settings", body)
        return str(reply.get("default_mode"))
