"""Navigation, lifecycle hooks and app management for apps.

- `sdk.navigation`: `list_available()`, `launch(app_scope, ...)`, `focus(instance_id)`,
  `close(instance_id)`, `open_default_app()`. Each is a request to the app manager, which
  checks it against the target app's state (installed, enabled), its entrypoints and the
  caller's conversation scope, and answers with the result or raises `CallFailed` with a
  definite error code.
- `sdk.lifecycle`: `on(hook, handler)` for the hooks the app manager sends (`start`,
  `foreground`, `background`, `suspend`, `restore`, `closing`), each with the instance;
  `instances()` is what the app knows of its own instances.
- `sdk.apps` (the app-registry app only; the runtime refuses anyone else): `list()`,
  `request(kind, app_scope=..., bundle=..., confirmed=...)` for install, enable, disable,
  update, rollback, remove and set_default. The app never touches the registry or bundles.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ._app_core import AppCore

APP_MANAGER: Final = "app_manager"
HOOKS: Final = frozenset({"start", "foreground", "background", "suspend", "restore", "closing"})
REQUEST_TIMEOUT: Final = 30.0  # an install verifies a bundle: allow it time

LifecycleHandler = Callable[[dict[str, Any]], Awaitable[None] | None]


async def _request(app: AppCore, body: dict[str, Any]) -> dict[str, Any]:
    row = await app.call(
        APP_MANAGER, "app_manager.request", body, timeout=REQUEST_TIMEOUT, id=app._ids.next()
    )
    result: dict[str, Any] = dict((row.get("request") or {}).get("result") or {})
    return result


class NavigationAPI:
    def __init__(self, app: AppCore) -> None:
        self._app = app

    async def list_available(self) -> list[dict[str, Any]]:
        """The apps that can be launched now (installed and enabled)."""
        apps = (await _request(self._app, {"kind": "list"})).get("apps", [])
        return [a for a in apps if a.get("enabled") and a.get("install_state") == "installed"]

    async def launch(
        self,
        app_scope: str,
        *,
        conversation_id: str | None = None,
        entrypoint: str | None = None,
        local: str | None = None,
    ) -> str:
        """Launch (or bring forward) an instance of `app_scope`; its instance id."""
        body: dict[str, Any] = {"kind": "launch", "app_scope": app_scope}
        for key, value in (
            ("conversation_id", conversation_id),
            ("entrypoint", entrypoint),
            ("local", local),
        ):
            if value is not None:
                body[key] = value
        return str((await _request(self._app, body))["instance_id"])

    async def focus(self, instance_id: str) -> None:
        await _request(self._app, {"kind": "focus", "instance_id": instance_id})

    async def close(self, instance_id: str) -> None:
        await _request(self._app, {"kind": "close", "instance_id": instance_id})

    async def open_default_app(self) -> str:
        """Bring up the user's default app (chat if none is set or it is not usable)."""
        return str((await _request(self._app, {"kind": "open_default"}))["instance_id"])


class LifecycleAPI:
    def __init__(self) -> None:
        self._handlers: dict[str, list[LifecycleHandler]] = {}
        self._instances: dict[str, dict[str, Any]] = {}

    def on(self, hook: str, handler: LifecycleHandler) -> Callable[[], None]:
        if hook not in HOOKS:
            raise ValueError(f"{hook!r} is not a lifecycle hook ({', '.join(sorted(HOOKS))})")
        self._handlers.setdefault(hook, []).append(handler)
        return lambda: self._handlers[hook].remove(handler)

    def instances(self) -> dict[str, dict[str, Any]]:
        return {key: dict(value) for key, value in self._instances.items()}

    async def _fire(self, event: dict[str, Any]) -> None:
        hook = str(event.get("hook"))
        instance_id = str(event.get("instance_id"))
        if hook == "closing":
            self._instances.pop(instance_id, None)
        else:
            self._instances[instance_id] = {
                "instance_id": instance_id,
                "conversation_id": event.get("conversation_id"),
                "mode": event.get("mode"),
                "last_hook": hook,
            }
        for handler in list(self._handlers.get(hook, ())):
            value = handler(dict(event))
            if inspect.isawaitable(value):
                await value


class AppsAPI:
    """App management for the app-registry app: requests only, answered by the runtime."""

    def __init__(self, app: AppCore) -> None:
        self._app = app

    async def list(self) -> list[dict[str, Any]]:
        return list((await _request(self._app, {"kind": "list"})).get("apps", []))

    async def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        """install (`bundle`), enable, disable, update (`bundle`), rollback, remove
        (`confirmed=True` once the user confirmed), set_default — each by `app_scope`."""
        return await _request(self._app, {"kind": kind, **fields})
