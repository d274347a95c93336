"""The app manifest `lineup.app.v1` and its check against this runtime's SDK.

The manifest is generated at build time from what the app declares in code (its tools come
from the SDK's tool declarations); it is the non-executable public contract the runtime
checks at install, enable and launch. An app that needs an SDK feature this runtime does
not offer is incompatible: it never enters the inventory, gets an instance or receives a
tool call, and the refusal names every missing feature.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Final, Literal, NamedTuple

from pydantic import Field, StringConstraints, ValidationError, model_validator

from contracts import _ids
from contracts._catalog import SUBSCRIBABLE_TYPES
from contracts._codes import Code, ContractError
from contracts._ids import AppScope, CapabilityName, EntrypointId, SdkFeature, SemVer
from contracts._json import decode_json
from contracts._model import ContractModel, Label, first_violation, rule
from contracts._surface import DisplayMode, SurfaceEvent, SurfacePath, check_surface
from contracts._tools import ToolDescriptor

MANIFEST_FORMAT: Final = "lineup.app.v1"
MAX_MANIFEST_BYTES: Final = 1024 * 1024
RUNTIME_SDK_API_VERSION: Final = "1"
SUPPORTED_SDK_API_VERSIONS: Final = frozenset({RUNTIME_SDK_API_VERSION})
# The Runtime SDK v1 features the contract specifies: what a manifest may name.
SDK_FEATURES: Final = frozenset(
    {
        "app.lifecycle.v1",
        "app.tools.v1",
        "surface.state.v1",
        "app.session-data.v1",
        "app.navigation.v1",
        "agent.messages.v1",
        "app.actions.v1",
        "artifact.create.v1",
        "capability.request.v1",
    }
)
# The features this runtime serves today: an app that requires any other is refused
# (`app_incompatible`) rather than installed to get nothing. A feature joins this set
# together with the code that serves it and its tests.
RUNTIME_SDK_FEATURES: Final = frozenset(
    {
        "app.lifecycle.v1",
        "app.navigation.v1",
        "agent.messages.v1",
        "app.actions.v1",
        "app.tools.v1",
        "app.session-data.v1",
        "artifact.create.v1",
        "capability.request.v1",
    }
)
_TOOLS_FEATURE: Final = "app.tools.v1"
_CAPABILITY_FEATURE: Final = "capability.request.v1"


def _duplicates(values: Iterable[str]) -> str | None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None


class RuntimeSdk(ContractModel):
    api_version: Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{0,3}$")]
    required_features: Annotated[list[SdkFeature], Field(max_length=64)] = Field(
        default_factory=list
    )
    optional_features: Annotated[list[SdkFeature], Field(max_length=64)] = Field(
        default_factory=list
    )

    @model_validator(mode="after")
    def _distinct(self) -> RuntimeSdk:
        for name in ("required_features", "optional_features"):
            twice = _duplicates(getattr(self, name))
            if twice is not None:
                raise rule(name, f"{twice!r} is listed twice")
        both = sorted(set(self.required_features) & set(self.optional_features))
        if both:
            raise rule("optional_features", f"{both[0]!r} is also required")
        return self


class Entrypoint(ContractModel):
    """A way into the app: `primary` is a full view (may be the default app), `contextual`
    opens within a conversation's context."""

    id: EntrypointId
    kind: Literal["primary", "contextual"]
    default_eligible: bool = False
    # The app's own UI for this entrypoint: an HTML file under the bundle's `app/` (the
    # bundle check refuses one that is missing), shown in a sandboxed frame, with the
    # events it may emit through the surface bridge (`_surface`).
    surface: SurfacePath | None = None
    surface_events: Annotated[list[SurfaceEvent], Field(max_length=64)] | None = None
    # How its surface may be shown (`stage` when it says nothing): the host picks the one in
    # force among these (an app that may float, `pip`, does so while another is in front).
    display_modes: Annotated[list[DisplayMode], Field(min_length=1, max_length=4)] | None = None

    @model_validator(mode="after")
    def _default(self) -> Entrypoint:
        if self.default_eligible and self.kind != "primary":
            raise rule("default_eligible", "only a primary entrypoint can be the default app")
        check_surface(
            self.id,
            self.surface,
            self.surface_events or [],
            list(self.display_modes) if self.display_modes is not None else None,
        )
        return self


class AgentSubscription(ContractModel):
    """An agent message type the app wants delivered, per conversation or per instance."""

    type: _ids.MessageType
    scope: Literal["conversation", "instance"]

    @model_validator(mode="after")
    def _known(self) -> AgentSubscription:
        if self.type not in SUBSCRIBABLE_TYPES:
            raise rule("type", f"{self.type!r} is not an agent message type an app can receive")
        return self


class AppManifest(ContractModel):
    """`lineup.app.v1`. Unknown fields are violations: a manifest is a closed contract."""

    format: Literal["lineup.app.v1"]
    app_scope: AppScope
    version: SemVer
    title: Label | None = None
    runtime_sdk: RuntimeSdk
    entrypoints: Annotated[list[Entrypoint], Field(min_length=1, max_length=32)]
    agent_subscriptions: Annotated[list[AgentSubscription], Field(max_length=64)] = Field(
        default_factory=list
    )
    tools: Annotated[list[ToolDescriptor], Field(max_length=128)] = Field(default_factory=list)
    capabilities: Annotated[list[CapabilityName], Field(max_length=64)] = Field(
        default_factory=list
    )

    def tool(self, method: str) -> ToolDescriptor | None:
        """The declared tool with this method name, if any."""
        return next((tool for tool in self.tools if tool.method == method), None)

    @model_validator(mode="after")
    def _coherent(self) -> AppManifest:
        # Fixed order, so an invalid manifest always reports the same first violation.
        if self.app_scope == _ids.SCOPE_RUNTIME:
            raise rule("app_scope", "'runtime' is reserved for the runtime itself")
        twice = _duplicates(entry.id for entry in self.entrypoints)
        if twice is not None:
            raise rule("entrypoints", f"id {twice!r} is listed twice")
        twice = _duplicates(sub.type for sub in self.agent_subscriptions)
        if twice is not None:
            raise rule("agent_subscriptions", f"{twice!r} is listed twice")
        twice = _duplicates(tool.method for tool in self.tools)
        if twice is not None:
            raise rule("tools", f"method {twice!r} is declared twice")
        features = {*self.runtime_sdk.required_features, *self.runtime_sdk.optional_features}
        if self.tools and _TOOLS_FEATURE not in features:
            # Required, or optional where the app runs without its tools being called.
            raise rule("runtime_sdk", f"tools need {_TOOLS_FEATURE!r}")
        if self.tools and all(sub.type != "lineup.tool.invoke" for sub in self.agent_subscriptions):
            raise rule("agent_subscriptions", "tools need a 'lineup.tool.invoke' subscription")
        twice = _duplicates(self.capabilities)
        if twice is not None:
            raise rule("capabilities", f"{twice!r} is listed twice")
        for index, tool in enumerate(self.tools):
            undeclared = [name for name in tool.capabilities if name not in self.capabilities]
            if undeclared:
                raise rule(f"tools[{index}].capabilities", f"{undeclared[0]!r} is not declared")
        if self.capabilities and _CAPABILITY_FEATURE not in features:
            raise rule("runtime_sdk", f"capabilities need {_CAPABILITY_FEATURE!r}")
        return self


class SdkCompatibility(NamedTuple):
    """How a manifest's SDK needs compare with what this runtime offers."""

    api_version_supported: bool
    missing_required: tuple[str, ...]
    unavailable_optional: tuple[str, ...]

    @property
    def compatible(self) -> bool:
        """The app can be installed, enabled and launched here."""
        return self.api_version_supported and not self.missing_required


def check_sdk_compatibility(
    manifest: AppManifest,
    *,
    offered_features: frozenset[str] = RUNTIME_SDK_FEATURES,
    api_versions: frozenset[str] = SUPPORTED_SDK_API_VERSIONS,
) -> SdkCompatibility:
    """Compares the manifest's `runtime_sdk` with the features and API versions offered."""
    sdk = manifest.runtime_sdk
    return SdkCompatibility(
        api_version_supported=sdk.api_version in api_versions,
        missing_required=tuple(f for f in sdk.required_features if f not in offered_features),
        unavailable_optional=tuple(f for f in sdk.optional_features if f not in offered_features),
    )


def validate_manifest(
    raw: bytes | bytearray | memoryview | str | Mapping[str, Any],
    *,
    offered_features: frozenset[str] = RUNTIME_SDK_FEATURES,
    api_versions: frozenset[str] = SUPPORTED_SDK_API_VERSIONS,
) -> AppManifest:
    """A checked manifest this runtime can run, or `ContractError`.

    `invalid_manifest` names the first violation (`path: message`); `app_incompatible`
    names the unsupported API version or every missing required feature.
    """
    value = decode_json(raw, max_bytes=MAX_MANIFEST_BYTES)
    try:
        manifest = AppManifest.model_validate(value)
    except ValidationError as exc:
        raise ContractError(Code.INVALID_MANIFEST, first_violation(exc)) from None
    verdict = check_sdk_compatibility(
        manifest, offered_features=offered_features, api_versions=api_versions
    )
    if not verdict.api_version_supported:
        supported = ", ".join(sorted(api_versions))
        raise ContractError(
            Code.APP_INCOMPATIBLE,
            f"runtime_sdk.api_version: {manifest.runtime_sdk.api_version!r} is not supported"
            f" (supported: {supported})",
        )
    if verdict.missing_required:
        raise ContractError(
            Code.APP_INCOMPATIBLE,
            "runtime_sdk.required_features: missing " + ", ".join(verdict.missing_required),
        )
    return manifest
