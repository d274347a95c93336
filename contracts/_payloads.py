"""Payloads of the conversation, surface, local-input and runtime message types.

Tool calls, receipts and the inventory live in `_tools.py`; which sender may send which
type, and to which target, is decided in `_catalog.py`. Keeping a payload closed
(`extra="forbid"`) is what lets the runtime promise an app that it only ever sees fields the
contract names (apps never see legacy fields).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from contracts._ids import (
    TOOL_METHOD_PATTERN,
    AppScope,
    EntrypointId,
    InstanceId,
    InteractionId,
    TaskId,
    instance_app_scope,
)
from contracts._model import ContractModel, JsonObject, Label, Text, rule

MessageText = Annotated[str, StringConstraints(min_length=1, max_length=65536)]
Percent = Annotated[int, Field(ge=0, le=100)]
OptionId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
ActionName = Annotated[str, StringConstraints(pattern=TOOL_METHOD_PATTERN, max_length=64)]


ArtifactId = Annotated[str, StringConstraints(pattern=r"^art_[0-9A-Za-z]{26}$")]
MediaType = Annotated[str, StringConstraints(min_length=3, max_length=255)]
# The Interaction App's modes: `im` (text), `audio` (the user talks, the agent is spoken).
InteractionMode = Literal["im", "audio"]


class ArtifactReference(ContractModel):
    """An artifact kept by the runtime, as the agent is handed it: never a path. The same
    four fields as a tool result's `artifact` (section 6)."""

    artifact_id: ArtifactId
    title: Label
    media_type: MediaType
    size: Annotated[int, Field(ge=0)]


class ChatMessage(ContractModel):
    """`lineup.message`: a text turn in a conversation, from the agent or the user.

    A user's message says the conversation's mode when it was sent (`mode`), and a spoken
    one hands the agent the recording its text was written out from (`audio`); both are
    the user's alone (`_envelope` refuses them from any other sender)."""

    text: MessageText
    format: Literal["markdown", "plain"] = "markdown"
    mode: InteractionMode | None = None
    audio: ArtifactReference | None = None


class TaskProgress(ContractModel):
    """`lineup.task.progress`: the agent reports how a task it runs is going."""

    task_id: TaskId
    status: Literal["pending", "running", "succeeded", "failed", "cancelled"]
    percent: Percent | None = None
    label: Label | None = None


class ChoiceOption(ContractModel):
    id: OptionId
    label: Label


class ChoiceRequest(ContractModel):
    """Pick one (or, with `multiple`, several) of the options."""

    interaction_id: InteractionId
    kind: Literal["choice"]
    prompt: Text
    options: Annotated[list[ChoiceOption], Field(min_length=1, max_length=32)]
    multiple: bool = False

    @model_validator(mode="after")
    def _unique_options(self) -> ChoiceRequest:
        ids = [option.id for option in self.options]
        if len(set(ids)) != len(ids):
            raise rule("options", "option ids must be unique")
        return self


class ConfirmRequest(ContractModel):
    """Yes or no."""

    interaction_id: InteractionId
    kind: Literal["confirm"]
    prompt: Text
    confirm_label: Label | None = None
    cancel_label: Label | None = None


class InputRequest(ContractModel):
    """Free text."""

    interaction_id: InteractionId
    kind: Literal["input"]
    prompt: Text
    placeholder: Label | None = None
    multiline: bool = False


# `lineup.interaction.request`: the standard primitives of the Interaction App.
InteractionRequest = Annotated[
    ChoiceRequest | ConfirmRequest | InputRequest, Field(discriminator="kind")
]


class ChoiceResponse(ContractModel):
    interaction_id: InteractionId
    kind: Literal["choice"]
    selected: Annotated[list[OptionId], Field(min_length=1, max_length=32)]


class ConfirmResponse(ContractModel):
    interaction_id: InteractionId
    kind: Literal["confirm"]
    confirmed: bool


class InputResponse(ContractModel):
    interaction_id: InteractionId
    kind: Literal["input"]
    text: Annotated[str, StringConstraints(max_length=65536)]


# `lineup.interaction.response`: the user's answer, sent back to the agent.
InteractionResponse = Annotated[
    ChoiceResponse | ConfirmResponse | InputResponse, Field(discriminator="kind")
]


class InteractionWithdraw(ContractModel):
    """`lineup.interaction.withdraw`: the agent no longer asks a question it asked.

    The chat closes the question (no longer open, not answerable): a question the
    conversation walked past would otherwise wait forever and make a short answer (`/1`,
    `/yes`) ambiguous. `reason` is a short label for the person, e.g. "the conversation
    moved on".
    """

    interaction_id: InteractionId
    reason: Label | None = None


class SurfaceOpen(ContractModel):
    """`lineup.surface.open`: show an app's entrypoint for the instance in `scope`."""

    entrypoint: EntrypointId
    state: JsonObject = Field(default_factory=dict)


class SurfaceClose(ContractModel):
    """`lineup.surface.close`: the instance's surface goes away."""

    reason: Label | None = None


class StatePatch(ContractModel):
    """`lineup.app.state.patch`: a JSON Merge Patch (RFC 7386) to the instance's state.

    `base_revision`, when given, is the state revision the patch was made against; the
    runtime rejects a patch against an older revision instead of merging it.
    """

    patch: JsonObject
    base_revision: Annotated[int, Field(ge=0)] | None = None


class UiAction(ContractModel):
    """`lineup.ui.action`: a declarative action a person took in a local UI.

    Its own type, sender kinds and audit type: it is never an agent tool call, even when it
    asks for the same business effect as one.
    """

    action: ActionName
    input: JsonObject = Field(default_factory=dict)


HostIntentKind = Literal[
    "launch", "focus", "background", "suspend", "restore", "close", "open_default"
]
_INTENTS_ON_INSTANCE = frozenset({"focus", "background", "suspend", "restore", "close"})


class HostIntent(ContractModel):
    """`lineup.host.intent`: a lifecycle intent from the host shell (window, tray, deep link).

    Addressed to the runtime, which alone decides what happens to apps.
    """

    intent: HostIntentKind
    app_scope: AppScope | None = None
    instance_id: InstanceId | None = None
    entrypoint: EntrypointId | None = None

    @model_validator(mode="after")
    def _targets(self) -> HostIntent:
        if self.intent == "launch" and self.app_scope is None:
            raise rule("app_scope", "required to launch")
        if self.intent in _INTENTS_ON_INSTANCE and self.instance_id is None:
            raise rule("instance_id", f"required to {self.intent}")
        if (
            self.app_scope is not None
            and self.instance_id is not None
            and instance_app_scope(self.instance_id) != self.app_scope
        ):
            raise rule("instance_id", "belongs to another app_scope")
        return self


RuntimeState = Literal[
    "created",
    "restoring",
    "authenticating",
    "synchronizing",
    "online",
    "reconnecting",
    "offline_degraded",
    "stopping",
    "stopped",
]


class RuntimeStatus(ContractModel):
    """`lineup.runtime.status`: the runtime lifecycle, a global runtime event."""

    state: RuntimeState
    detail: Text | None = None
