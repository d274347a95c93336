"""An app's manifest, declared in its code: the only source of `manifest.json`.

The developer declares tools, schemas and activation requirements in code and keeps no
second, hand-written description (不维护第二份手写描述). `@declare_app(...)` on a
`RuntimeApp` subclass holds the manifest's metadata, `@tool(...)` on a handler method holds
one tool's descriptor, and `manifest_of(cls)` builds the `lineup.app.v1` manifest from them,
validated. The manifest is the public, non-executable contract; the method → handler map
stays in the SDK (`tool_handlers`, with the calls' runtime in `_tools`).

Both decorators validate at once, so a wrong declaration fails when the app's module is
imported, naming the field, not later at build or install time.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, TypeGuard, TypeVar

from actors.kernel import Actor
from contracts import (
    MANIFEST_FORMAT,
    RUNTIME_SDK_API_VERSION,
    validate_manifest,
    validate_tool_descriptor,
)

from ._tool_table import TOOL_ATTR, ToolDeclaration, declared_tools

_APP_ATTR: Final = "__lineup_app__"
_APP_KINDS: Final = frozenset({"core", "installed"})

AppClass = TypeVar("AppClass", bound=type[Any])
Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])


@dataclass(frozen=True)
class AppDeclaration:
    """What `@declare_app` holds: the manifest's fields other than `format` and `tools`."""

    app_scope: str
    version: str
    title: str | None
    api_version: str
    required_features: tuple[str, ...]
    optional_features: tuple[str, ...]
    entrypoints: tuple[dict[str, Any], ...]
    agent_subscriptions: tuple[dict[str, Any], ...]
    capabilities: tuple[str, ...]


def is_app_class(value: object) -> TypeGuard[type[Actor]]:
    """A `RuntimeApp` subclass: an actor class with the app's own start (this module does
    not import the SDK's base class, whose parts read the declarations made here)."""
    return (
        isinstance(value, type)
        and issubclass(value, Actor)
        and callable(getattr(value, "on_app_start", None))
    )


def _reflow(docstring: str | None) -> str:
    """A docstring as the agent should read it: paragraphs kept, line breaks within them not."""
    paragraphs = (docstring or "").split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs).strip()


def tool(
    method: str,
    /,
    *,
    input_schema: Mapping[str, Any],
    output_schema: Mapping[str, Any],
    contract_version: str = "1",
    title: str | None = None,
    description: str | None = None,
    call_model: str | None = None,
    timeout_ms: int | None = None,
    idempotent: bool | None = None,
    risk: str | None = None,
    activation_requirement: str | None = None,
    launch_policy: Mapping[str, Any] | None = None,
    handling: str | None = None,
    delivery: str | None = None,
    capabilities: Sequence[str] = (),
    annotations: Mapping[str, Any] | None = None,
    rerun_after_restart: bool = False,
) -> Callable[[Handler], Handler]:
    """Declares the decorated method as the handler of tool `method`.

    The keywords are the fields of `ToolDescriptor` (docs/protocol.md §9); one left out
    (None) takes the descriptor's default. `description` defaults to the handler's
    docstring. The handler is `async def handler(self, arguments: dict) -> dict`, or
    `async def handler(self, arguments, call: ToolCall)` to report progress on its call;
    it may return `PENDING` to end the call later (`sdk.tools.complete` / `fail`). A
    `delivery="surface_bridge"` tool's handler returning `None` hands the call to the
    instance's surface, which answers it through the bridge (`lineup.onToolCall`).

    A call the app's restart cut short runs again when its tool is idempotent; otherwise
    it ends `handler_failed`, since the handler may have done part of its work. A tool that
    is not idempotent for a new call but is for the same one (every effect of its handler
    goes through the SDK, whose ids derive from the call, so a second run asks nothing
    twice: a capability request gets the first run's answer) says so with
    `rerun_after_restart=True`. It stays the SDK's: the manifest does not carry it.
    """
    options = {
        "title": title,
        "call_model": call_model,
        "timeout_ms": timeout_ms,
        "idempotent": idempotent,
        "risk": risk,
        "activation_requirement": activation_requirement,
        "launch_policy": dict(launch_policy) if launch_policy is not None else None,
        "handling": handling,
        "delivery": delivery,
        "annotations": dict(annotations) if annotations is not None else None,
    }

    def decorate(handler: Handler) -> Handler:
        is_async = inspect.iscoroutinefunction(handler)  # (not a narrowing `if`: keep the type)
        if not is_async:
            raise TypeError(f"the handler of tool {method!r} must be an `async def`")
        text = description if description is not None else _reflow(inspect.getdoc(handler))
        raw = {
            "method": method,
            "contract_version": contract_version,
            "description": text,
            "input_schema": dict(input_schema),
            "output_schema": dict(output_schema),
            "capabilities": list(capabilities),
            **{key: value for key, value in options.items() if value is not None},
        }
        declaration = ToolDeclaration(
            validate_tool_descriptor(raw), handler.__name__, runs_again=rerun_after_restart
        )
        setattr(handler, TOOL_ATTR, declaration)
        return handler

    return decorate


def declare_app(
    *,
    app_scope: str,
    version: str,
    entrypoints: Sequence[Mapping[str, Any]],
    title: str | None = None,
    kind: str = "installed",
    required_features: Sequence[str] = (),
    optional_features: Sequence[str] = (),
    agent_subscriptions: Sequence[Mapping[str, Any]] = (),
    capabilities: Sequence[str] = (),
    api_version: str = RUNTIME_SDK_API_VERSION,
) -> Callable[[AppClass], AppClass]:
    """Declares the decorated `RuntimeApp` subclass's manifest (its tools come from `@tool`).

    The keywords are the manifest's fields (docs/protocol.md §9), with `runtime_sdk` spread
    into `api_version`, `required_features` and `optional_features`. The class's
    `app_version` and `app_kind` are set from `version` and `kind`, so the version the app
    reports at run time is the one its manifest declares.
    """
    if kind not in _APP_KINDS:
        raise ValueError(f"`kind` must be one of {sorted(_APP_KINDS)}, not {kind!r}")
    declaration = AppDeclaration(
        app_scope=app_scope,
        version=version,
        title=title,
        api_version=api_version,
        required_features=tuple(required_features),
        optional_features=tuple(optional_features),
        entrypoints=tuple(dict(entry) for entry in entrypoints),
        agent_subscriptions=tuple(dict(sub) for sub in agent_subscriptions),
        capabilities=tuple(capabilities),
    )

    def decorate(app_class: AppClass) -> AppClass:
        checked: object = app_class  # the check narrows its own name, not the decorated one
        if not is_app_class(checked):
            raise TypeError("@declare_app decorates a RuntimeApp subclass")
        setattr(app_class, _APP_ATTR, declaration)
        app_class.app_version = version
        app_class.app_kind = kind
        manifest_of(app_class)  # fail at import, naming the first violation
        return app_class

    return decorate


def manifest_of(app_class: type[Any]) -> dict[str, Any]:
    """The `lineup.app.v1` manifest of a declared app, validated and in canonical form.

    Raises `ContractError` (`invalid_manifest` naming the first violation). It is also
    checked against this runtime's SDK features (`app_incompatible`): an app is built with
    the SDK it runs on, so a feature this SDK lacks is one the app cannot have used.
    """
    declaration = vars(app_class).get(_APP_ATTR)
    if not isinstance(declaration, AppDeclaration):
        raise TypeError(f"{app_class.__name__} is not declared with @declare_app")
    raw: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "app_scope": declaration.app_scope,
        "version": declaration.version,
        "runtime_sdk": {
            "api_version": declaration.api_version,
            "required_features": list(declaration.required_features),
            "optional_features": list(declaration.optional_features),
        },
        "entrypoints": list(declaration.entrypoints),
        "agent_subscriptions": list(declaration.agent_subscriptions),
        "tools": [
            tool.descriptor.model_dump(mode="json", exclude_none=True)
            for tool in declared_tools(app_class).values()
        ],
        "capabilities": list(declaration.capabilities),
    }
    if declaration.title is not None:
        raw["title"] = declaration.title
    return validate_manifest(raw).model_dump(mode="json", exclude_none=True)


def declared_app(module: ModuleType) -> type[Actor]:
    """The one app class `module` declares (defined in it or its package, decorated with
    `@declare_app`): how a build finds what to put in the manifest."""
    found = {
        value
        for value in vars(module).values()
        if is_app_class(value)
        and _APP_ATTR in vars(value)
        and (value.__module__ + ".").startswith(module.__name__ + ".")
    }
    if len(found) != 1:
        names = ", ".join(sorted(cls.__name__ for cls in found)) or "none"
        raise LookupError(f"{module.__name__} must declare one app class (found: {names})")
    return found.pop()
