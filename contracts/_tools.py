"""Tool descriptors, tool-call payloads and receipts, the inventory.

A descriptor is the non-executable public contract an app's SDK generates from its source;
the runtime publishes the visible ones to the agent as a revisioned inventory. It follows
MCP's tool descriptor (`title`, `description`, `input_schema`, `output_schema`, hint
`annotations`), and is stricter where the runtime needs it: a revisioned inventory, one
final result per call, an output schema.

JSON Schema validation is ~50 µs per document, so it happens only at trust boundaries:
when a descriptor is accepted and when a call's arguments or a handler's output cross into
or out of an app. Validators are compiled once per distinct schema and reused.

An app writes its own schemas, so a schema is hostile input too: one that cannot be
checked in bounded time makes the descriptor invalid, its regular expressions run on RE2,
and every check has a budget (`_schema_check`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, Field, StringConstraints, model_validator
from pydantic import ValidationError as ModelError

from contracts._codes import Code, ContractError
from contracts._ids import (
    AppScope,
    CapabilityName,
    EntrypointId,
    InventoryRevision,
    SemVer,
    Timestamp,
    ToolMethod,
)
from contracts._json import decode_json
from contracts._model import (
    ContractModel,
    JsonObject,
    Label,
    Text,
    first_violation,
    rule,
)
from contracts._payloads import Percent
from contracts._schema_check import SchemaTooCostly, first_error, schema_problem

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
ContractVersion = Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{0,5}$")]
CallModel = Literal["query", "command", "interactive", "operation"]
RiskLevel = Literal["low", "medium", "high"]
ActivationRequirement = Literal["app_ready", "foreground_required", "activation_not_required"]
Handling = Literal["direct", "interaction", "runtime_operation"]
Delivery = Literal["miniapp_sdk", "surface_bridge", "runtime"]
CodeField = Annotated[Code, Field(strict=False)]  # strict enums would refuse plain strings


def _check_json_schema(schema: JsonObject) -> JsonObject:
    """A tool's input or output schema: a valid draft 2020-12 schema of a JSON object that
    can be checked in bounded time (`_schema_check`)."""
    dialect: object = schema.get("$schema", JSON_SCHEMA_DIALECT)
    if dialect != JSON_SCHEMA_DIALECT:
        raise rule("$schema", f"must be {JSON_SCHEMA_DIALECT}")
    problem = schema_problem(schema)
    if problem is not None:
        where, why = problem
        raise rule(where.lstrip("/").replace("/", ".") or "(root)", why)
    if schema.get("type") != "object":
        raise rule("type", "the root of a tool schema must be {'type': 'object'}")
    return schema


ToolSchema = Annotated[JsonObject, AfterValidator(_check_json_schema)]


# A call's life when its tool declares no `timeout_ms`: the runtime ends it
# `operation_expired` then (progress extends it, up to ten times that in all).
DEFAULT_TOOL_TIMEOUT_MS: Final = 30_000


class LaunchPolicy(ContractModel):
    """Whether the runtime may start the app for a call, where it puts it, and after.

    `focus` left out means: foreground when the tool's activation requirement is
    `foreground_required`, background otherwise (see `ToolDescriptor.launch_focus`).
    """

    launch: Literal["if_needed", "never"] = "if_needed"
    focus: Literal["foreground", "background"] | None = None
    restore_focus: bool = True


class ToolAnnotations(ContractModel):
    """MCP-style hints for the agent. Hints only: the runtime never enforces by them."""

    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    open_world_hint: bool | None = None


class ToolDescriptor(ContractModel):
    """One agent-callable method of an app, located by `app_scope / method / contract_version`."""

    method: ToolMethod
    contract_version: ContractVersion
    title: Label | None = None
    description: Text = ""
    input_schema: ToolSchema
    output_schema: ToolSchema
    call_model: CallModel = "command"
    timeout_ms: Annotated[int, Field(ge=100, le=86_400_000)] = DEFAULT_TOOL_TIMEOUT_MS
    idempotent: bool = False
    risk: RiskLevel = "medium"
    activation_requirement: ActivationRequirement = "app_ready"
    launch_policy: LaunchPolicy = Field(default_factory=LaunchPolicy)
    handling: Handling = "direct"
    delivery: Delivery = "miniapp_sdk"
    capabilities: Annotated[list[CapabilityName], Field(max_length=32)] = Field(
        default_factory=list
    )
    annotations: ToolAnnotations | None = None

    @property
    def requires_foreground(self) -> bool:
        """The call runs only while the app's instance is in the foreground."""
        return self.activation_requirement == "foreground_required"

    @property
    def launch_focus(self) -> Literal["foreground", "background"]:
        """Where a launched instance goes, after applying the default."""
        if self.launch_policy.focus is not None:
            return self.launch_policy.focus
        return "foreground" if self.requires_foreground else "background"

    @model_validator(mode="after")
    def _coherent(self) -> ToolDescriptor:
        # Checked in a fixed order, so an invalid descriptor always names the same rule.
        if self.requires_foreground and self.launch_policy.focus == "background":
            raise rule(
                "launch_policy.focus",
                "a foreground_required tool cannot launch its app in the background",
            )
        if self.delivery == "surface_bridge" and not self.requires_foreground:
            # Its surface answers it, and a surface is shown for the app in front only.
            raise rule("delivery", "a surface_bridge tool is foreground_required")
        if self.call_model == "query":
            if self.annotations is not None and self.annotations.destructive_hint:
                raise rule("annotations.destructive_hint", "a query tool is read-only")
            if self.annotations is not None and self.annotations.read_only_hint is False:
                raise rule("annotations.read_only_hint", "a query tool is read-only")
        if len(set(self.capabilities)) != len(self.capabilities):
            raise rule("capabilities", "listed twice")
        return self


def validate_tool_descriptor(
    raw: bytes | bytearray | memoryview | str | Mapping[str, Any],
) -> ToolDescriptor:
    """A checked `ToolDescriptor`, or `ContractError(invalid_tool_descriptor)` naming the
    first violation."""
    value = decode_json(raw)
    try:
        return ToolDescriptor.model_validate(value)
    except ModelError as exc:
        raise ContractError(Code.INVALID_TOOL_DESCRIPTOR, first_violation(exc)) from None


def _check_against(schema: JsonObject, value: object, code: Code, what: str) -> None:
    """The first violation, located by its JSON pointer (RFC 6901; "" is the whole value)."""
    try:
        error = first_error(schema, value)
    except SchemaTooCostly:
        raise ContractError(
            code,
            f"{what} cost more than the runtime spends on checking one against its schema;"
            " send a smaller value or declare a simpler schema",
        ) from None
    if error is not None:
        pointer = "".join(
            "/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.absolute_path
        )
        raise ContractError(code, f"{what} at {pointer!r}: {error.message}")


def check_tool_arguments(tool: ToolDescriptor, arguments: object) -> None:
    """Raises `ContractError(invalid_arguments)` unless `arguments` fit the input schema."""
    _check_against(tool.input_schema, arguments, Code.INVALID_ARGUMENTS, "arguments")


def check_tool_output(tool: ToolDescriptor, output: object) -> None:
    """Raises `ContractError(handler_failed)` unless a final result fits the output schema.

    Only the final result is held to the output schema; accepted, starting and progress are
    protocol facts outside it.
    """
    _check_against(tool.output_schema, output, Code.HANDLER_FAILED, "output")


# --- payloads of the tool call and its receipts -------------------------------------------


class ToolInvoke(ContractModel):
    """`lineup.tool.invoke`: the agent calls `method` of the app in `target.app_scope`.

    `correlation.call_id` names the call; `correlation.inventory_revision` is the inventory
    the agent chose it from, and a call against an older revision is refused.
    """

    method: ToolMethod
    contract_version: ContractVersion
    arguments: JsonObject


class ToolCancel(ContractModel):
    """`lineup.tool.cancel`: the agent withdraws the call named by `correlation.call_id`.

    A call not yet finished ends with `cancelled_by_user`; one already finished keeps its
    outcome, which the agent gets again.
    """

    reason: Text | None = None


class ToolAccepted(ContractModel):
    """The runtime has durably taken the call; it will end with exactly one result or error."""


class ToolStarting(ContractModel):
    """The call needs the app started (or brought forward) first; activation has begun."""


class ToolActivationReady(ContractModel):
    """The app instance in `scope.instance_id` is ready; waiting calls now run in order."""


class ToolActivationFailed(ContractModel):
    """The app could not be activated; calls waiting on it are refused with this code."""

    code: CodeField
    detail: Text | None = None


class ToolActivationCancelled(ContractModel):
    """Activation was cancelled (by the user, or by an `activation_not_required` call)."""

    code: CodeField = Code.CANCELLED_BY_USER
    detail: Text | None = None


class ToolProgress(ContractModel):
    """Business progress: a replayable protocol fact, not held to the output schema.

    `stage: "started"` is the moment the work really began (e.g. a timer is running), the
    only point at which the agent may tell the user so. `ends_at` is set by the runtime
    alone, on the start of a deadline operation: when it will end.
    """

    stage: Label | None = None
    percent: Percent | None = None
    message: Text | None = None
    ends_at: Timestamp | None = None


class ToolResult(ContractModel):
    """The one final business result of a call; `output` must fit the output schema."""

    output: JsonObject


class ToolError(ContractModel):
    """The one final failure of a call."""

    code: CodeField
    message: Text | None = None
    retryable: bool = False


# --- the inventory ------------------------------------------------------------------------


class InventoryTool(ToolDescriptor):
    """A visible tool, with the app that owns it."""

    app_scope: AppScope


class InventoryApp(ContractModel):
    app_scope: AppScope
    version: SemVer
    title: Label | None = None
    entrypoints: list[EntrypointId] = Field(default_factory=list)


StandardComponent = Literal[
    "text", "markdown", "image", "link", "status", "task", "choice", "confirm", "input",
    "artifact",
]  # fmt: skip


class Inventory(ContractModel):
    """`lineup.inventory`: what the agent may use in this conversation, at `revision`.

    Never carries bundle code, tokens, file paths or user content.
    """

    revision: InventoryRevision
    tools: list[InventoryTool] = Field(default_factory=list)
    apps: list[InventoryApp] = Field(default_factory=list)
    components: list[StandardComponent] = Field(default_factory=list)
    capabilities: list[CapabilityName] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_tools(self) -> Inventory:
        keys = [(tool.app_scope, tool.method) for tool in self.tools]
        if len(set(keys)) != len(keys):
            raise rule("tools", "an app_scope/method pair is listed twice")
        return self
