"""The app-registry core app: lists apps and asks the runtime to change them.

It uses the SDK only (`sdk.apps`): every install, enable, disable, update, rollback,
remove and set-default is a request that the app manager checks and runs as an observable
operation. The app never writes the registry, never opens a bundle and never touches an
app's files. Input comes from the user's side through the host actor (`app.input`):

    {"kind": "list"}
    {"kind": "install", "bundle": PATH} | {"kind": "update", "app_scope", "bundle": PATH}
    {"kind": "enable" | "disable" | "rollback" | "set_default", "app_scope"}
    {"kind": "remove", "app_scope", "confirmed": true}   (the UI asked the user first)

Each outcome (the operation's result, or its refusal code) is kept for the UI: the last
ones are in the app's statistics (`lineup debug actors --stats`).
"""

from __future__ import annotations

from typing import Any, Final

from apps.sdk import CallFailed, RuntimeApp, declare_app

MANAGE: Final = frozenset(
    {"install", "update", "enable", "disable", "rollback", "remove", "set_default"}
)
KEEP: Final = 20


@declare_app(
    app_scope="app-registry",
    version="1.0.0",
    title="App Registry",
    kind="core",
    entrypoints=[{"id": "main", "kind": "primary"}],
    required_features=["app.lifecycle.v1", "app.navigation.v1"],
)
class AppRegistryApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.outcomes: list[dict[str, Any]] = []
        self.apps: list[dict[str, Any]] = []

    def statistics_extra(self) -> dict[str, Any]:
        return {
            **super().statistics_extra(),
            "apps": getattr(self, "apps", []),
            "outcomes": getattr(self, "outcomes", []),
        }

    async def on_input(self, body: dict[str, Any]) -> None:
        kind = str(body.get("kind"))
        try:
            if kind == "list":
                self.apps = await self.sdk.apps.list()
                outcome: dict[str, Any] = {"kind": kind, "ok": True, "apps": len(self.apps)}
            elif kind in MANAGE:
                fields: dict[str, Any] = {
                    k: body[k] for k in ("app_scope", "bundle", "confirmed") if k in body
                }
                result = await self.sdk.apps.request(kind, **fields)
                outcome = {"kind": kind, "ok": True, **fields, "result": result}
                self.apps = await self.sdk.apps.list()
            else:
                outcome = {"kind": kind, "ok": False, "code": "invalid_payload"}
        except CallFailed as exc:
            outcome = {"kind": kind, "ok": False, "code": exc.code, "detail": exc.detail}
        self.outcomes = [*self.outcomes, outcome][-KEEP:]
