"""What the tool router takes, and from whom: the agent's calls and cancels from the store
once it stored them, the registry's view from the app manager, from any app process its
reports on its own calls, its questions about its deadline operations and its actions on
them (whose calls they are is the router's next check, by the sender), from the chat app
alone the user's stop of a call, and from the settings app alone the user's view and
replacement of the tool policy."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, JsonValue
from typing_extensions import TypedDict

from actors.kernel import APPS, Door, accept
from contracts import SCOPE_SETTINGS

_CLOSED = ConfigDict(extra="forbid")


class CallView(TypedDict):
    """What the tool router needs of an agent's `lineup.tool.invoke` or `.cancel`, which
    the router accepted (its payload checked against the contract)."""

    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    type: Literal["lineup.tool.invoke", "lineup.tool.cancel"]
    envelope_id: str
    seq: int
    conversation_id: str
    agent_id: str
    app_scope: str
    call_id: str | None
    revision: str | None
    payload: dict[str, Any]  # as the contract holds an invoke's or a cancel's


class Inbound(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    calls: list[CallView]
    associate: dict[str, str]


class FocusSettings(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    focus_stack: list[str]


class AppsView(TypedDict):
    """The app manager's view (the shape of `actors.app_manager.registry.read_apps`, which
    the tool router reads at start): every record and the live instances, as the
    registry's rows, the focus stack, and the view's version (`[epoch, n]`)."""

    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    records: list[dict[str, JsonValue]]
    instances: list[dict[str, JsonValue]]
    settings: FocusSettings
    version: Annotated[list[int], Field(min_length=2, max_length=2)]


class Report(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    call_id: Annotated[str, Field(max_length=70)]
    kind: Literal["progress", "result", "error", "deadline"]
    stage: NotRequired[Annotated[str, Field(max_length=200)] | None]
    percent: NotRequired[Annotated[int, Field(ge=0, le=100)] | None]
    message: NotRequired[Annotated[str, Field(max_length=4096)] | None]
    output: NotRequired[dict[str, JsonValue]]
    code: NotRequired[Annotated[str, Field(max_length=64)]]
    # A deadline: the call is the runtime's until `duration_ms` after it started.
    duration_ms: NotRequired[Annotated[int, Field(ge=1, le=86_400_000)]]
    display: NotRequired[dict[str, JsonValue]]
    # Refused (`already_running`) while another open operation of the same tool runs in
    # the conversation: the app runs that tool's operations one at a time.
    alone: NotRequired[bool]


class DeadlineRequest(TypedDict):
    """An app's question about its deadline operations in the conversation of `call_id`, a
    call of its own that is running: `list` them, or `interrupt` the open ones (for the
    agent). Or its action on one of its own open operations, `call_id` the operation's
    call: `finish` it now with `output` as the result, `pause` or `resume` its counting, or
    `user_stop` it (the user's stop, through the app)."""

    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    call_id: Annotated[str, Field(max_length=70)]
    action: Literal["list", "interrupt", "finish", "pause", "resume", "user_stop"]
    output: NotRequired[dict[str, JsonValue]]


class Interrupt(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    call_id: Annotated[str, Field(max_length=70)]


class NoFields(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]


class PolicyReplace(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    policy: dict[str, JsonValue]


DOOR = Door(
    {
        "tool_router.inbound": accept("router", body=Inbound),
        "tool_router.apps": accept("app_manager", body=AppsView),
        "tool_router.report": accept(APPS, body=Report),
        "tool_router.deadline": accept(APPS, body=DeadlineRequest),
        # The user's stop of a call: only the chat app speaks for the user (it takes its
        # input from the host actor alone).
        "tool_router.interrupt": accept("app.chat", body=Interrupt),
        # The user's tool policy, seen and replaced from the settings app only (`_policy_edit`).
        "tool_router.policy.get": accept(f"app.{SCOPE_SETTINGS}", body=NoFields),
        "tool_router.policy.replace": accept(f"app.{SCOPE_SETTINGS}", body=PolicyReplace),
    }
)
