"""What the capability gateway takes, and from whom: a request from any app process (whose
scope is the sender the supervisor stamped, never a body field), the user's answer to a
consent card from the chat app (where the user answers it) or the host (the user's side),
and a revocation from the operator (`lineup capabilities revoke`, on the control socket) or
the settings app, which alone also lists the grants in force for the user; the operator also
asks what would serve each capability now. The user's side alone (the operator, the host,
the web host for its page's Save) saves an artifact into downloads. A file the user chose
for an app comes from the user's side only (the host for the terminal chat, the web host for
its page): no app can hand itself a "chosen" file. A recording's yes, its bytes and its stop
come from the user's side only too (the web host for its page, the host for the terminal),
and so does the chat's push-to-talk (the web host). An app takes back only its own requests."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, NotRequired

from pydantic import ConfigDict, Field, JsonValue
from typing_extensions import TypedDict

from actors.kernel import APPS, Door, accept
from contracts import FILE_OPEN_MAX_BYTES, SCOPE_CHAT, SCOPE_SETTINGS

_CLOSED = ConfigDict(extra="forbid")
# An app's own id for a request: what it asks again with to learn the outcome.
_REQUEST_ID = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")]
# The gateway's key of a request: `<app_scope>/<the app's request id>`.
_REQUEST_KEY = Annotated[str, Field(pattern=r"^[a-z0-9_.-]{1,64}/[A-Za-z0-9_.:-]{1,80}$")]
_NAME = Annotated[str, Field(min_length=1, max_length=64)]


# A recording the page sends: an artifact holds at most 192 KiB by default
# (`ArtifactLimits`): a page's Opus at 12 kb/s fills it in about two minutes, a 16 kHz WAV
# in six seconds.
MAX_RECORDING_BYTES: Final = 192 * 1024


class Request(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    request_id: _REQUEST_ID
    capability: _NAME
    purpose: Annotated[str, Field(min_length=1, max_length=500)]
    input: NotRequired[JsonValue]
    timeout_ms: NotRequired[Annotated[int, Field(ge=1_000, le=600_000)]]


class Withdraw(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    request_id: _REQUEST_ID


class Consent(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    request_id: _REQUEST_KEY
    answer: Literal["once", "session", "always", "deny", "dismiss"]


class Revoke(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    app_scope: _NAME
    capability: _NAME


class NoFields(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]


class SaveArtifact(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    artifact_id: Annotated[str, Field(min_length=1, max_length=64)]
    name: NotRequired[Annotated[str, Field(min_length=1, max_length=1024)]]


class FileChosen(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    request_id: _REQUEST_KEY
    name: Annotated[str, Field(min_length=1, max_length=1024)]
    media_type: Annotated[str, Field(max_length=255)]  # what the chooser declared; may be ""
    data: Annotated[bytes, Field(max_length=FILE_OPEN_MAX_BYTES)]
    chooser: Literal["web", "terminal"]


class RecordStart(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    request_id: _REQUEST_KEY


class Recorded(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    request_id: _REQUEST_KEY
    data: Annotated[bytes, Field(max_length=MAX_RECORDING_BYTES)]
    media_type: Annotated[str, Field(max_length=255)]  # what the page declared; may be ""
    stopped: NotRequired[Literal["user", "limit", "background"]]


class Talk(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    conversation_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
    talk_id: Annotated[str, Field(pattern=r"^[0-9A-Z]{26}$")]  # the page's id for the press


class PolicySection(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    section: Any


DOOR = Door(
    {
        "capability_gateway.request": accept(APPS, body=Request),
        # An app takes back a request of its own (its scope is the stamp, as for a request).
        "capability_gateway.withdraw": accept(APPS, body=Withdraw),
        "capability_gateway.consent": accept(f"app.{SCOPE_CHAT}", "host", body=Consent),
        "capability_gateway.revoke": accept("debug", f"app.{SCOPE_SETTINGS}", body=Revoke),
        # What would serve each capability now, for the user (`lineup settings show`).
        "capability_gateway.providers": accept("debug", body=NoFields),
        # The grants in force, for the user's settings app (which also revokes them).
        "capability_gateway.grants": accept(f"app.{SCOPE_SETTINGS}", body=NoFields),
        # A new policy file's capabilities section, checked before the tool router writes it.
        "capability_gateway.policy.check": accept("tool_router", body=PolicySection),
        # The user saves an artifact into downloads (`lineup artifacts save`, the page's
        # Save button); no app may.
        "capability_gateway.save_artifact": accept("debug", "host", "web_host", body=SaveArtifact),
        # The file the user chose for a file.open request: the terminal chat's, through the
        # host, or the page's, uploaded to the web host.
        "capability_gateway.file_chosen": accept("host", "web_host", body=FileChosen),
        # The user's yes to a recording in the page, what the page recorded, and the user's
        # stop of one recorded here: the user's side only, never an app.
        "capability_gateway.record_start": accept("web_host", body=RecordStart),
        "capability_gateway.recorded": accept("web_host", body=Recorded),
        "capability_gateway.record_stop": accept("host", "web_host", body=RecordStart),
        # The user's push-to-talk in the page, recorded for the chat (`_talk`): the user's
        # side only, so no app records a "spoken message" in the user's place.
        "capability_gateway.talk": accept("web_host", body=Talk),
        # An app ends its own recording early (its surface's Stop): its scope is the stamp.
        "capability_gateway.stop": accept(APPS, body=Withdraw),
    }
)
