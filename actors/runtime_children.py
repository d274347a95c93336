"""The runtime's own children and their settings: what `python -m supervisor` runs when no
config file replaces it, and what `lineup run` starts.

The default children, in start order (stopped in reverse), are the runtime's actors and the
core apps; everything the runtime knows of a core app derives from its `@declare_app`
declaration.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from actors.capability_gateway import served_capabilities
from actors.kernel import ChildSpec, RuntimeConfig
from apps.app_registry import AppRegistryApp
from apps.chat import ChatApp
from apps.sdk import RuntimeApp, manifest_of
from apps.settings import SettingsApp

# Who may send an app process what: the SDK's surface (every app.* process has this door).
APP_DOOR = "apps.sdk.door:DOOR"

# The core apps: they ship with the runtime and run as its children, the chat,
# the app registry and the settings. Each declares its manifest with `@declare_app` like
# any app, and everything the runtime knows of them derives from those declarations: their
# children and settings, the host's UI apps, the app manager's core records and the
# router's view of them before the app manager's first word.
CORE_APPS: tuple[type[RuntimeApp], ...] = (ChatApp, AppRegistryApp, SettingsApp)
CORE_MANIFESTS: dict[str, dict[str, Any]] = {
    str(manifest["app_scope"]): manifest for manifest in map(manifest_of, CORE_APPS)
}


def _actor(
    name: str,
    package: str,
    cls: str,
    *,
    reaches_outside: bool = False,
    syncs_before: tuple[str, ...] = (),
    **config: object,
) -> ChildSpec:
    """An actor of the runtime: its package holds its class and its door."""
    return ChildSpec(
        name=name,
        target=f"{package}:{cls}",
        door=f"{package}.door:DOOR",
        config=config,
        reaches_outside=reaches_outside,
        syncs_before=list(syncs_before),
    )


def _core_app(app: type[RuntimeApp]) -> ChildSpec:
    """A core app's process: its mailbox is its App Inbox."""
    scope = manifest_of(app)["app_scope"]
    return ChildSpec(name=f"app.{scope}", target=f"{app.__module__}:{app.__name__}", door=APP_DOOR)


def core_routing() -> dict[str, dict[str, object]]:
    """The router's view of the core apps, as the app manager writes it for any app."""
    return {
        scope: {
            "enabled": True,
            "subscriptions": [s["type"] for s in manifest["agent_subscriptions"]],
            "instances": [],
        }
        for scope, manifest in CORE_MANIFESTS.items()
    }


RUNTIME_CHILDREN = [
    _actor("store", "actors.store", "StoreActor"),
    _actor("router", "actors.router", "RouterActor", apps=core_routing()),
    _actor(
        "app_manager",
        "actors.app_manager",
        "AppManagerActor",
        core_apps=list(CORE_MANIFESTS.values()),
    ),
    _actor(
        "tool_router",
        "actors.tool_router",
        "ToolRouterActor",
        # Its steps are synced before the agent hears of them (`_steps`).
        syncs_before=("transport",),
        core_apps=list(CORE_MANIFESTS.values()),
    ),
    # The capability gateway, the transport and the user's side act beyond the device:
    # the user's files and desktop, the AppServer, the user's screens.
    _actor(
        "capability_gateway",
        "actors.capability_gateway",
        "CapabilityGatewayActor",
        reaches_outside=True,
        core_apps=list(CORE_MANIFESTS.values()),
    ),
    *map(_core_app, CORE_APPS),
    _actor("transport", "actors.transport", "TransportActor", reaches_outside=True),
    # The user's side: UI sessions and host lifecycle intents.
    _actor("host", "actors.host", "HostActor", reaches_outside=True),
]

# The user's window in a browser (`lineup run` adds it; `--no-web` leaves it out): a UI
# client kept alive like every actor, on loopback, started last.
WEB_HOST = _actor("web_host", "actors.web_host", "WebHostActor", reaches_outside=True)

# The runtime's AppServer token file in the data dir (mode 0600, transport only), where no
# keyring keeps it.
TOKEN_FILE = ".runtime_token"


def default_config(
    data_dir: str | Path | None = None,
    *,
    appserver_url: str | None = None,
    token_file: str | Path | None = None,
    web_port: int | None = None,
    user_downloads: bool = False,
) -> RuntimeConfig:
    """The runtime's children; with `data_dir`, each gets the settings it needs. With
    `web_port` (0: any free port), the web host too, on 127.0.0.1. With `user_downloads`
    (the user's own runtime, `lineup run`), a file an app saves goes into the user's
    downloads folder when no page takes it, not the data dir's.

    The store and the app manager get the data dir; an app gets only its private directory
    (`DATA_DIR/apps/<scope>`), never the data dir, the token or the AppServer's address;
    the transport gets the AppServer URL and the token file's path.
    """
    web = [] if web_port is None else [WEB_HOST]
    if data_dir is None:
        children = [*RUNTIME_CHILDREN, *web]
        return RuntimeConfig(children=children, strategy="one_for_one", app_door=APP_DOOR)
    root = Path(data_dir).resolve()
    settings: dict[str, dict[str, object]] = {
        "store": {"data_dir": str(root)},
        "router": {"data_dir": str(root)},
        "app_manager": {"data_dir": str(root)},
        # The tool router offers agents the tools whose capabilities this host serves.
        "tool_router": {
            "data_dir": str(root),
            "host_capabilities": sorted(served_capabilities(os.environ, pages=bool(web))),
        },
        "capability_gateway": {
            "data_dir": str(root),
            **({"downloads": "user"} if user_downloads else {}),
        },
        **{
            f"app.{scope}": {"app_scope": scope, "app_dir": str(root / "apps" / scope)}
            for scope in CORE_MANIFESTS
        },
        "host": {"ui_apps": list(CORE_MANIFESTS)},
        "transport": {
            "appserver_url": appserver_url,
            "token_file": str(Path(token_file).resolve() if token_file else root / TOKEN_FILE),
            # The data dir's own token is the keyring's where there is one (`_token`).
            "data_dir": str(root),
        },
        # It reads the chat's and the registry's projections and uses the UI socket; it
        # never reads the token.
        "web_host": {"data_dir": str(root), "port": web_port},
    }
    if web:  # the chat and the app manager tell the web host when what it shows changed
        settings["app.chat"]["view_watcher"] = WEB_HOST.name
        # The gateway shows an app's notification on an open page, where the desktop cannot,
        # and a file an app saves goes to the browser of a page that shows its conversation.
        settings["capability_gateway"]["web_host"] = WEB_HOST.name
        settings["app_manager"]["registry_watcher"] = WEB_HOST.name
    children = [
        child.model_copy(update={"config": {**child.config, **settings.get(child.name, {})}})
        for child in [*RUNTIME_CHILDREN, *web]
    ]
    return RuntimeConfig(children=children, strategy="one_for_one", app_door=APP_DOOR)
