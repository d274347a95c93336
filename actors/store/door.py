"""What the store takes, and from whom: every request comes from the actor that owns the
fact it writes (the router for what the agent said and the outbox, the transport for the
stream's position and the lifecycle, the app manager for the registry, an app's process
for its own session data). The tool router keeps its calls and inventories in its own
file, and so does the capability gateway its requests and grants; each asks the store only
what is the conversation's (who the agents are) and the registry's, and casts it audit
rows.

An app reaches the store for its own session data with two types,
`store.session_data.get` and `store.session_data.replace`, safe to open to it: they read and
write only the `app_session_data` rows of the scope the supervisor stamped on the sender,
for a live instance of that scope, within the session-data quotas, and touch no other
table. Beside them an app may report its own
diagnostics (`store.diagnostics.report`): the rows written are those of its stamped scope,
bounded in number, and only ever shown, never acted on. And an app keeps artifacts
(`store.artifacts.create`, `.read`, `.list`): rows and files of its stamped scope only,
within the artifact quotas, read back by itself and the chat alone; the capability gateway
alone keeps one for an app that a provider made (`store.artifacts.keep`, naming the app, the
only artifact body that may). The settings app alone
(for the user) reads the overview of every app's data: counts and sizes, never the data."""

from __future__ import annotations

from typing import Annotated, Literal, Required

from pydantic import ConfigDict, Field, JsonValue
from typing_extensions import TypedDict

from actors.kernel import APPS, Door, accept
from contracts import SCOPE_SETTINGS, AppScope, OutboxVerdict

_CLOSED = ConfigDict(extra="forbid")


class Empty(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]


class OutboxItem(TypedDict):
    key: str
    envelope: str
    origin: str | None
    conversation_id: str


class PersistItem(TypedDict):
    """One message of the stream the router accepted, as the store keeps it."""

    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    seq: int
    id: str
    conversation_id: str
    app_scope: str | None
    type: str
    sender_kind: str
    sender_id: str
    envelope: str


class RejectionRow(TypedDict):
    """One message of the stream the router rejected, as the store audits it."""

    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    seq: int
    message_id: str | None
    code: str
    detail: str


class Persist(TypedDict, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    items: list[PersistItem]
    rejections: list[RejectionRow]
    outbox: list[OutboxItem]
    associate: dict[str, str]
    cursor: int


class Enqueue(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    items: list[OutboxItem]


class Pending(TypedDict, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    after: int
    limit: int


class _AuditRequired(TypedDict):
    code: str


class Audit(_AuditRequired, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    detail: str
    message_id: str | None
    seq: int | None


class _LifecycleRequired(TypedDict):
    state: str


class Lifecycle(_LifecycleRequired, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    detail: str


class AppsRemoved(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    app_scopes: list[AppScope]


# An instance id as the app manager makes them (`<scope>:<local>`), bounded.
_InstanceId = Annotated[str, Field(min_length=1, max_length=256)]


class SessionDataGet(TypedDict, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    instance_id: _InstanceId


class _SessionDataReplaceRequired(TypedDict):
    data: dict[str, JsonValue]
    expected_revision: Annotated[int, Field(strict=True, ge=0)]


class SessionDataReplace(_SessionDataReplaceRequired, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    instance_id: _InstanceId


class _DiagnosticHealthRequired(TypedDict):
    status: Literal["ok", "degraded", "failing"]


class DiagnosticHealth(_DiagnosticHealthRequired, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    detail: Annotated[str, Field(max_length=300)]


class _DiagnosticEventRequired(TypedDict):
    level: Literal["debug", "info", "warning", "error"]
    name: Annotated[str, Field(min_length=1, max_length=64)]


class DiagnosticEvent(_DiagnosticEventRequired, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    fields: dict[str, JsonValue]


class DiagnosticsReport(TypedDict, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    health: DiagnosticHealth
    events: Annotated[list[DiagnosticEvent], Field(max_length=20)]


# An artifact id as the store mints them, bounded (`_artifacts` checks its shape).
_ArtifactId = Annotated[str, Field(min_length=1, max_length=64)]


class _ArtifactCreateRequired(TypedDict):
    data: bytes
    media_type: Annotated[str, Field(min_length=1, max_length=160)]
    title: Annotated[str, Field(min_length=1, max_length=1000)]


class ArtifactCreate(_ArtifactCreateRequired, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    conversation_id: Annotated[str, Field(min_length=1, max_length=256)] | None


class ArtifactKeep(ArtifactCreate, total=False):
    """An artifact a capability's provider made, for the app it names. `replaceable`: the
    store may let it go, oldest first, to keep a later replaceable one of the same app
    within the app's quotas."""

    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    app_scope: Required[AppScope]
    replaceable: bool


class ArtifactId(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    artifact_id: _ArtifactId


class ArtifactPage(TypedDict, total=False):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    after: _ArtifactId


DOOR = Door(
    {
        "store.inbound.persist": accept("router", body=Persist),
        "store.cursor.get": accept("router", "transport", body=Empty),
        "store.conversations": accept("router", "tool_router", body=Empty),
        "store.outbox.enqueue": accept("router", body=Enqueue),
        "store.outbox.pending": accept("transport", body=Pending),
        "store.outbox.settle": accept("transport", body=OutboxVerdict),
        "store.audit": accept(
            "host",
            "router",
            "app_manager",
            "tool_router",
            "transport",
            "capability_gateway",
            body=Audit,
        ),
        "store.lifecycle.set": accept("transport", body=Lifecycle),
        # Apps the app manager is removing: what the store keeps of them goes.
        "store.apps.removed": accept("app_manager", body=AppsRemoved),
        "store.diagnostics.report": accept(APPS, body=DiagnosticsReport),
        # An app's own session data (the scope is the sender's stamp): see the docstring.
        "store.session_data.get": accept(APPS, body=SessionDataGet),
        "store.session_data.replace": accept(APPS, body=SessionDataReplace),
        # An app's own artifacts (the scope is the sender's stamp; `_artifacts` has the
        # rules); the chat reads any, to show it; the tool router checks a tool result's
        # reference; the capability gateway reads one for the user to save.
        "store.artifacts.create": accept(APPS, body=ArtifactCreate),
        "store.artifacts.read": accept(APPS, "capability_gateway", body=ArtifactId),
        "store.artifacts.list": accept(APPS, body=ArtifactPage),
        "store.artifacts.meta": accept("tool_router", "capability_gateway", body=ArtifactId),
        # An artifact a capability's provider made for an app (the gateway names the app).
        "store.artifacts.keep": accept("capability_gateway", body=ArtifactKeep),
        # Each app's data at a glance, for the user's settings app only (`_overview`).
        "store.app_data.overview": accept(f"app.{SCOPE_SETTINGS}", body=Empty),
    }
)
