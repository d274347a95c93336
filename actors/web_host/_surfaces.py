"""The surfaces the web host shows: which instance has one, and its files, served.

A surface is an HTML file of an installed app's verified bundle, shown in the page's
`<iframe sandbox="allow-scripts">`: its origin is opaque, so it reads no cookie, no
storage and nothing of the page. It is served from the bundle cache only
(`DATA_DIR/bundles/<digest>/app/`, the digest of the app's installed version), each file
held to the SHA-256 its signature lists before it is sent, and only while the instance is
live and its app enabled.

A page asks its socket to open the surface of an instance (`_bridge`) and gets a **token**
for it: 32 random bytes, valid while that socket is open and the instance live. The
frame's address is `/surface/TOKEN/PATH`: the frame's own requests carry no cookie (its
origin is opaque, so they are cross-site), so the token in the path is what lets them in,
and it names the one instance the web host relays for. Every answer under it carries the
surface's policy:

    default-src 'none'; script-src ORIGIN/surface/TOKEN/ ORIGIN/surface-bridge.js;
    style-src ORIGIN/surface/TOKEN/; img-src ORIGIN/surface/TOKEN/ data:;
    font-src ORIGIN/surface/TOKEN/; connect-src 'none'; form-action 'none';
    base-uri 'none'; frame-ancestors ORIGIN; sandbox allow-scripts

Sources are the web host's own address with a path, not `'self'`: the policy then means
the same whatever origin the sandbox gives the document (Chromium matches `'self'` against
the response's URL, so both work there). No fetch, XHR, WebSocket or beacon reaches
anywhere; scripts, styles and images come from the surface's own files and the bridge; no
form is sent; and only the web host's page may frame it.

What the manifest of a cache entry declares is read and checked once per entry (its name is
its content's digest), when the registry first names it, in a worker thread, so that
opening a surface is a look-up in the web host's event loop. What the page or the web host
drops of a surface's messages is counted by reason or code: under the frame, and in the web
host's statistics (`surfaces`: `page_dropped`, `refused`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from actors.app_manager.registry import LIVE_STATES
from contracts import (
    DEFAULT_DISPLAY_MODES,
    AppManifest,
    Code,
    ContractError,
    Entrypoint,
    SurfaceEvent,
    validate_manifest,
)

BRIDGE_PATH: Final = "/surface-bridge.js"
SURFACE_PREFIX: Final = "/surface/"
# The app manager's live instance states: a surface is shown only for one of these.
MEDIA_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".woff2": "font/woff2",
}
_SEGMENT: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_DIGEST: Final = re.compile(r"^[0-9a-f]{64}$")
_TOKEN_BYTES: Final = 32


@dataclass(frozen=True)
class Surface:
    """One instance's surface as a page shows it."""

    instance_id: str
    app_scope: str
    title: str
    entry: Path  # the verified bundle's cache entry
    path: str  # the surface's HTML file, under `app/`
    events: dict[str, SurfaceEvent]
    capabilities: frozenset[str]
    tools: frozenset[str]  # the app's `surface_bridge` tools: the calls it may answer
    hashes: dict[str, str] = field(repr=False)  # `app/...` -> the signed SHA-256
    modes: tuple[str, ...] = DEFAULT_DISPLAY_MODES  # how it may be shown (`display_modes`)

    def declared(self) -> dict[str, Any]:
        """What the page checks a message against: the events' schemas, the capabilities,
        the tools whose calls the surface may answer."""
        return {
            "events": {name: event.payload_schema for name, event in self.events.items()},
            "capabilities": sorted(self.capabilities),
            "tools": sorted(self.tools),
            "modes": list(self.modes),
        }


def _surface_entry(manifest: AppManifest) -> Entrypoint | None:
    """The entrypoint with the app's surface (an app has one at most)."""
    return next((entry for entry in manifest.entrypoints if entry.surface is not None), None)


def _signed_hashes(entry: Path) -> dict[str, str]:
    record = json.loads((entry / "signature.json").read_bytes())
    return {str(f["path"]): str(f["sha256"]) for f in record["signed"]["files"]}


def find_surface(data_dir: Path, instance_id: str, apps: dict[str, Any]) -> Surface:
    """The surface of a live instance of an enabled app, from its verified cache entry;
    `instance_not_found`, `app_disabled` or `invalid_entrypoint` (no surface) otherwise.
    `apps` is the registry as just read (`actors.store`'s readers)."""
    instance = next((i for i in apps["instances"] if i["instance_id"] == instance_id), None)
    if instance is None or instance["state"] not in LIVE_STATES:
        raise ContractError(Code.INSTANCE_NOT_FOUND, f"no live instance {instance_id!r}")
    scope = instance["app_scope"]
    record = next((r for r in apps["records"] if r["app_scope"] == scope), None)
    if record is None or not record["enabled"]:
        raise ContractError(Code.APP_DISABLED, f"{scope!r} is not enabled")
    digest = str(record.get("bundle_digest") or "")
    entry = Path(data_dir) / "bundles" / digest
    if not _DIGEST.match(digest) or not entry.is_dir():
        raise ContractError(Code.INVALID_ENTRYPOINT, f"{scope!r} has no bundle to show")
    declared = _bundle_surface(entry)
    if declared is None:
        raise ContractError(Code.INVALID_ENTRYPOINT, f"{scope!r} declares no surface")
    return replace(
        declared, instance_id=instance_id, app_scope=scope, title=declared.title or scope
    )


# A cache entry's name is the digest of its content, which nothing rewrites: what its
# manifest declares is read and checked once per process, not at each open (≈0.8 ms a
# check; 27-100 ms for a manifest whose tool schemas the process has not checked yet), and
# kept for each entry it read (one per version of an app installed: a few). What a surface
# serves is held to the signed hashes at each request all the same.
_DECLARED: dict[Path, Surface | None] = {}


def _bundle_surface(entry: Path) -> Surface | None:
    """The surface a cache entry's manifest declares, for no instance yet; None if none."""
    if entry not in _DECLARED:
        _DECLARED[entry] = _read_surface(entry)
    return _DECLARED[entry]


def surface_checked(data_dir: Path, instance_id: str, apps: dict[str, Any]) -> bool:
    """Whether the manifest of the cache entry `instance_id`'s app runs from was read and
    checked already: `find_surface` then costs a look-up and a `stat`."""
    instance = next((i for i in apps["instances"] if i["instance_id"] == instance_id), None)
    scope = instance["app_scope"] if instance is not None else None
    record = next((r for r in apps["records"] if r["app_scope"] == scope), None)
    digest = str((record or {}).get("bundle_digest") or "")
    return bool(digest) and Path(data_dir) / "bundles" / digest in _DECLARED


def _read_surface(entry: Path) -> Surface | None:
    manifest = validate_manifest((entry / "manifest.json").read_bytes())
    found = _surface_entry(manifest)
    if found is None or found.surface is None:
        return None
    return Surface(
        instance_id="",
        app_scope=manifest.app_scope,
        title=manifest.title or "",
        entry=entry,
        path=found.surface,
        events={event.name: event for event in found.surface_events or ()},
        modes=tuple(found.display_modes or DEFAULT_DISPLAY_MODES),
        capabilities=frozenset(manifest.capabilities),
        tools=frozenset(t.method for t in manifest.tools if t.delivery == "surface_bridge"),
        hashes=_signed_hashes(entry),
    )


def warm_surfaces(data_dir: Path, apps: dict[str, Any]) -> None:
    """Read and check the surface of each enabled app's cache entry (`apps`, the registry
    as just read) before a page opens one: a manifest's first check costs tens of ms (its
    tool schemas held to the metaschema), which would otherwise fall on its first open. An
    entry that cannot be read is left to the open, which says why."""
    for record in apps["records"]:
        digest = str(record.get("bundle_digest") or "")
        entry = Path(data_dir) / "bundles" / digest
        if record["enabled"] and _DIGEST.match(digest) and entry.is_dir():
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError, ContractError):
                _bundle_surface(entry)


def surfaces_shown(apps: dict[str, Any]) -> list[dict[str, str]]:
    """The live instances whose app has a surface, the one in front first, in the registry
    as read (`read_apps`)."""
    stack = list(apps["settings"].get("focus_stack") or [])
    with_surface = {
        r["app_scope"]: (r.get("manifest") or {}).get("title") or r["app_scope"]
        for r in apps["records"]
        if r["enabled"]
        and any(e.get("surface") for e in (r.get("manifest") or {}).get("entrypoints", []))
    }
    shown = [
        {
            "instance_id": i["instance_id"],
            "app_scope": i["app_scope"],
            "title": with_surface[i["app_scope"]],
        }
        for i in apps["instances"]
        if i["state"] in LIVE_STATES and i["app_scope"] in with_surface
    ]
    on_top = {instance: n for n, instance in enumerate(reversed(stack))}
    return sorted(shown, key=lambda s: on_top.get(s["instance_id"], len(on_top)))


def surface_file(surface: Surface, relative: str) -> tuple[bytes, str] | None:
    """A file of the surface's bundle with its media type, if the path is a plain one of a
    served kind and the file is exactly the signed one; None otherwise."""
    parts = relative.split("/")
    suffix = Path(relative).suffix.lower()
    if not all(_SEGMENT.match(part) for part in parts) or suffix not in MEDIA_TYPES:
        return None
    name = "app/" + relative
    expected = surface.hashes.get(name)
    if expected is None:
        return None
    try:
        data = (surface.entry / name).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != expected:  # a cache entry changed on disk
        return None
    return data, MEDIA_TYPES[suffix]


def surface_headers(host: str, token: str) -> list[tuple[bytes, bytes]]:
    """The headers of every answer under `/surface/TOKEN/`, for the page at `host`."""
    origin = f"http://{host}"
    own = f"{origin}{SURFACE_PREFIX}{token}/"
    policy = (
        f"default-src 'none'; script-src {own} {origin}{BRIDGE_PATH}; style-src {own}; "
        f"img-src {own} data:; media-src data:; font-src {own}; connect-src 'none'; "
        "form-action 'none'; "
        f"base-uri 'none'; frame-ancestors {origin}; sandbox allow-scripts"
    )
    return [
        (b"content-security-policy", policy.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"cache-control", b"no-store"),
        # A surface never opens a microphone or a camera itself: it asks the runtime.
        (b"permissions-policy", b"microphone=(), camera=(), geolocation=()"),
    ]


def new_token() -> str:
    return secrets.token_urlsafe(_TOKEN_BYTES)
