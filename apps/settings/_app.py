"""The settings core app: the user's view of what the runtime allows and keeps, and the
changes the user makes to it.

It uses the SDK only (`sdk.settings`, `sdk.apps`): each fact it shows or changes is a
request to the actor that owns it, through a door that admits the settings app (and the
operator) only. It never opens `runtime.db`, the policy file or another app's files.

| fact | owner | shown with | changed with |
|---|---|---|---|
| capability grants | capability gateway | `grants` | `revoke` {app_scope, capability} |
| tool policy, each tool's visibility | tool router | `policy` | `set_policy` {policy} |
| the default app | app manager | `show` | `set_default` {app_scope} |
| the mode new conversations start in | chat | `show` | `set_mode` {mode: im, audio} |
| each app's data, the retention rule | store | `data` | (removing an app, in the registry) |

Input comes from the user's side through the host actor (`app.input`), `{"kind": ...}` as
above (`show` asks for everything); an input may carry an `input_id` of the UI's choosing,
which its outcome repeats. Each outcome (what the owner answered, or its refusal code and
sentence) is kept for the UI with the latest view: the last ones are in the app's
statistics (`lineup debug actors --stats`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from apps.sdk import CallFailed, RuntimeApp, declare_app

KEEP: Final = 20
# What an outcome repeats of its input is cut to this: outcomes are kept for the UI in the
# app's statistics, which must stay one frame whatever a UI sent.
MAX_ECHO: Final = 64

Step = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class BadInput(Exception):
    """An input the settings app cannot act on: its outcome is `invalid_payload`."""


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise BadInput(f"{key}: a name is needed")
    return value[: MAX_ECHO + 1]  # a longer one is no name: its owner refuses it


@declare_app(
    app_scope="settings",
    version="1.0.0",
    title="Settings",
    kind="core",
    entrypoints=[{"id": "main", "kind": "primary"}],
    required_features=["app.lifecycle.v1", "app.navigation.v1"],
)
class SettingsApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.view: dict[str, Any] = {}
        self.outcomes: list[dict[str, Any]] = []
        self.steps: dict[str, Step] = {
            "show": self._show,
            "grants": self._grants,
            "revoke": self._revoke,
            "policy": self._policy,
            "set_policy": self._set_policy,
            "set_default": self._set_default,
            "set_mode": self._set_mode,
            "data": self._data,
        }

    def statistics_extra(self) -> dict[str, Any]:
        return {
            **super().statistics_extra(),
            "view": getattr(self, "view", {}),
            "outcomes": getattr(self, "outcomes", []),
        }

    async def on_input(self, body: dict[str, Any]) -> None:
        kind = str(body.get("kind"))[:MAX_ECHO]
        outcome: dict[str, Any] = {"kind": kind}
        if isinstance(body.get("input_id"), str):
            outcome["input_id"] = body["input_id"][:MAX_ECHO]
        try:
            outcome.update(ok=True, **await self.steps.get(kind, self._unknown)(body))
        except BadInput as exc:
            outcome.update(ok=False, code="invalid_payload", detail=str(exc))
        except CallFailed as exc:
            outcome.update(ok=False, code=exc.code, detail=exc.detail)
        self.outcomes = [*self.outcomes, outcome][-KEEP:]

    # -- each input: ask the owner, keep its answer ------------------------------------------

    async def _unknown(self, body: dict[str, Any]) -> dict[str, Any]:
        kind = str(body.get("kind"))[:MAX_ECHO]
        raise BadInput(f"{kind!r} is not a settings input ({', '.join(self.steps)})")

    async def _grants(self, body: dict[str, Any]) -> dict[str, Any]:
        self.view["grants"] = await self.sdk.settings.grants()
        return {"grants": len(self.view["grants"])}

    async def _revoke(self, body: dict[str, Any]) -> dict[str, Any]:
        scope, capability = _text(body, "app_scope"), _text(body, "capability")
        result = await self.sdk.settings.revoke(scope, capability)
        await self._grants(body)
        return {"app_scope": scope, "capability": capability, "result": result}

    async def _policy(self, body: dict[str, Any]) -> dict[str, Any]:
        self.view["policy"] = await self.sdk.settings.policy()
        return {"broken": self.view["policy"].get("broken")}

    async def _set_policy(self, body: dict[str, Any]) -> dict[str, Any]:
        policy = body.get("policy")
        if not isinstance(policy, dict):
            raise BadInput("policy: a JSON object with allow and deny rules is needed")
        result = await self.sdk.settings.replace_policy(policy)
        await self._policy(body)
        return {"result": result}

    async def _set_default(self, body: dict[str, Any]) -> dict[str, Any]:
        scope = _text(body, "app_scope")
        result = await self.sdk.apps.request("set_default", app_scope=scope)
        self.view["default_app"] = result.get("default_app")
        return {"app_scope": scope, "result": result}

    async def _set_mode(self, body: dict[str, Any]) -> dict[str, Any]:
        mode = body.get("mode")
        if mode not in ("im", "audio"):
            raise BadInput("mode: im (text) or audio (voice)")
        self.view["default_mode"] = await self.sdk.settings.default_mode(str(mode))
        return {"default_mode": self.view["default_mode"]}

    async def _data(self, body: dict[str, Any]) -> dict[str, Any]:
        self.view["data"] = await self.sdk.settings.app_data()
        return {"apps": len(self.view["data"].get("apps", []))}

    async def _show(self, body: dict[str, Any]) -> dict[str, Any]:
        """Everything, each part from its owner; a part its owner refused says so."""
        parts: dict[str, Any] = {}
        for name in ("grants", "policy", "data"):
            try:
                await self.steps[name](body)
                parts[name] = "ok"
            except CallFailed as exc:
                parts[name] = exc.code
        self.view["default_app"] = await self.sdk.settings.default_app()
        try:
            self.view["default_mode"] = await self.sdk.settings.default_mode()
            parts["default_mode"] = "ok"
        except CallFailed as exc:
            parts["default_mode"] = exc.code
        return {"parts": parts}
