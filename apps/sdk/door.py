"""What an app process takes, and from whom: what the store persisted for it, the router's
word on its actions, the user's input through the host, its instances' lifecycle from the
app manager, the agent's tool calls (and, for the interaction app, how every call goes) from
the tool router, its own session data's changes from the store; for the interaction app,
the user's push-to-talk recordings from the capability gateway, and its settings from the
operator and the settings app. Nothing from another app:
no app can put words in the agent's or the user's mouth for another. (The supervisor's own
notices reach every actor without a door.)"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, JsonValue
from typing_extensions import TypedDict

from actors.kernel import Door, accept


class Deliver(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    messages: list[dict[str, Any]]


class ToolInvoke(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    call_id: str
    method: str
    arguments: dict[str, Any]
    app_scope: str
    conversation_id: str
    instance_id: str | None


class ToolCancel(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    call_id: str


class ActionState(TypedDict):
    """How one of the app's actions went: the router's refusal, or the agent's AppServer's
    verdict on the envelope it became (`id`, the envelope id the app minted)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    id: str | None
    state: str
    code: NotRequired[str]
    detail: NotRequired[str]
    seq: NotRequired[int]


class Lifecycle(TypedDict):
    """A move of one of the app's instances (`hook`: start, foreground, background,
    suspend, restore or closing), with the instance's mode after it."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    instance_id: str
    hook: str
    conversation_id: str | None
    mode: str


class DeadlineNews(TypedDict):
    """A deadline operation of the app's, as the runtime records it, and where it runs."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    call_id: str
    operation_id: str
    state: str
    duration_ms: int
    display: dict[str, JsonValue]
    started_at: NotRequired[str]
    ends_at: NotRequired[str]
    ended_at: NotRequired[str]
    remaining_ms: NotRequired[int]
    ended_by: NotRequired[str]
    conversation_id: str
    instance_id: str | None


class ToolEvent(TypedDict):
    """A step of one of the agent's tool calls, as the interaction app shows it: the
    tool's and the app's titles, and what the step says (a progress's stage, percent and
    message; a final's code and artifact; a deadline operation's moments)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    call_id: str
    conversation_id: str
    app_scope: str
    method: str
    state: str
    title: NotRequired[str]
    app_title: NotRequired[str]
    stage: NotRequired[str]
    percent: NotRequired[int | float]
    message: NotRequired[str]
    code: NotRequired[str]
    artifact: NotRequired[dict[str, JsonValue]]
    deadline: NotRequired[dict[str, JsonValue]]


class ToolStep(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    id: str  # the id the step would have had as an `app.tool.event` of its own
    step: ToolEvent


class ConsentCard(TypedDict):
    """A capability request's consent card, opened (`asking`) or closed with its
    `outcome`; what the user chooses with (`chooser`) or records with (`recorder`)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    request_id: str
    conversation_id: str
    app_scope: str
    capability: str
    purpose: str
    deadline_ms: int
    state: str
    outcome: NotRequired[str]
    chooser: NotRequired[dict[str, JsonValue]]
    recorder: NotRequired[dict[str, JsonValue]]


class ToolSteps(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    steps: list[ToolStep]


class SessionDataChanged(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    instance_id: str
    data: dict[str, Any]
    revision: int


class Recording(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    artifact_id: Annotated[str, Field(pattern=r"^art_[0-9A-Za-z]{26}$")]
    title: Annotated[str, Field(min_length=1, max_length=200)]
    media_type: Annotated[str, Field(min_length=3, max_length=255)]
    size: Annotated[int, Field(ge=0)]
    duration_ms: Annotated[int, Field(ge=0)]


class Recorded(TypedDict):
    """The user's push-to-talk recording, kept as the Interaction App's artifact, in the
    conversation of the page it was recorded in."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    conversation_id: Annotated[str, Field(min_length=1, max_length=256)]
    request_id: Annotated[str, Field(min_length=1, max_length=160)]
    recording: Recording


class InteractionSettings(TypedDict):
    """The mode new conversations start in: asked (no field) or set."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    default_mode: NotRequired[Literal["im", "audio"]]


class SurfaceRequest(TypedDict):
    """A surface's request, relayed by the web host for the instance it shows: `op` says
    which (an `event` with its `name` and `payload`; `session.get`, `.subscribe`,
    `.replace` with `data` and `expected_revision`; a `capability` asked with its
    `purpose` and `input`; `tool.calls`; and a call's answer, `tool.result` with its
    `output`, `tool.error` with its `code`, `tool.progress`), each op's fields as the
    page's bridge message had them."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    instance_id: str
    op: str
    name: NotRequired[str]
    payload: NotRequired[dict[str, JsonValue]]
    data: NotRequired[dict[str, JsonValue]]
    expected_revision: NotRequired[int]
    capability: NotRequired[str]
    purpose: NotRequired[str]
    input: NotRequired[JsonValue]
    call_id: NotRequired[str]
    output: NotRequired[dict[str, JsonValue]]
    code: NotRequired[str]
    message: NotRequired[str]
    stage: NotRequired[str]
    percent: NotRequired[int | float]


DOOR = Door(
    {
        "app.deliver": accept("router", body=Deliver),
        "app.action.state": accept("router", "store", body=ActionState),
        # The user's input: the app's own actions, whose shape is the app's to check.
        "app.input": accept("host", body=dict[str, JsonValue]),
        "app.lifecycle": accept("app_manager", body=Lifecycle),
        "app.tool.invoke": accept("tool_router", body=ToolInvoke),
        "app.tool.cancel": accept("tool_router", body=ToolCancel),
        # A deadline operation of the app's started or ended (the runtime's record of it).
        "app.tool.deadline": accept("tool_router", body=DeadlineNews),
        # The interaction app's view of the agent's tool calls (a step of one call).
        "app.tool.event": accept("tool_router", body=ToolEvent),
        # Several such steps, of one or more calls, in the order they were taken.
        "app.tool.events": accept("tool_router", body=ToolSteps),
        # A capability consent card opened or closed (the interaction app shows it).
        "app.capability.consent": accept("capability_gateway", body=ConsentCard),
        # A committed replace of the app's own session data, announced after the commit.
        "app.session_data.changed": accept("store", body=SessionDataChanged),
        # A surface's request, checked by the page and the web host, relayed for the
        # instance the web host shows (`_surface`).
        "app.surface.request": accept("web_host", body=SurfaceRequest),
        # The interaction app's audio mode (`_interaction`): what the user recorded with the
        # page's push-to-talk, from the capability gateway alone (no app puts a spoken
        # message in the user's mouth), and the mode new conversations start in, asked and
        # set by the operator (`lineup settings mode`) and the settings app alone.
        "app.interaction.recorded": accept("capability_gateway", body=Recorded),
        "app.interaction.settings": accept("debug", "app.settings", body=InteractionSettings),
    }
)
