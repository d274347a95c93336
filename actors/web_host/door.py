"""What the web host takes: what an app's process pushes to the surfaces the web host shows
for it, the chat app's notice that its view changed and the app manager's that the registry
did, and the capability gateway's notifications for the open pages (`_notifications`), its
questions about them, the files it hands them and its word that a recording in a page ends
(`_uploads`). Otherwise it is a UI client kept alive by the supervisor: it speaks to the
host actor through the UI socket, like the terminal chat."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from pydantic import ConfigDict, Field, JsonValue
from typing_extensions import TypedDict

from actors.kernel import Door, accept

from ._notifications import MAX_NOTIFICATION_ID


class SurfacePush(TypedDict):
    """An app's word to the surfaces of one of its instances (`_bridge`): a JSON merge
    patch of their state, a revision of the instance's session data, or a tool call
    handed to them."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    instance_id: str
    kind: Literal["state", "session", "tool_call"]
    patch: NotRequired[dict[str, JsonValue]]
    data: NotRequired[dict[str, JsonValue] | None]
    revision: NotRequired[int]
    call_id: NotRequired[str]
    method: NotRequired[str]
    arguments: NotRequired[dict[str, JsonValue]]


class PagesAsked(TypedDict):
    """How many pages: all that are open, or those that show `conversation_id`."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    conversation_id: NotRequired[Annotated[str, Field(min_length=1, max_length=256)]]


class Download(TypedDict):
    """A file the capability gateway saved in the runtime's downloads, by its name there."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    conversation_id: Annotated[str, Field(min_length=1, max_length=256)]
    name: Annotated[str, Field(min_length=1, max_length=255)]


class RecordingStop(TypedDict):
    """The capability gateway ends a recording a page of the conversation makes."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    conversation_id: Annotated[str, Field(min_length=1, max_length=256)]
    request_id: Annotated[str, Field(min_length=1, max_length=160)]


class LookAgain(TypedDict):
    """A "look again" (`_changes`): no content, so nothing in it to trust."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]


class Notify(TypedDict):
    """An app's notification to show on the open pages, by its deadline (wall clock, ms):
    the gateway's key of the request (the browser's tag for it), the app's title, and the
    notification's title and text as the gateway checked them."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    notification_id: Annotated[str, Field(min_length=1, max_length=MAX_NOTIFICATION_ID)]
    app: Annotated[str, Field(min_length=1, max_length=200)]
    title: Annotated[str, Field(max_length=100)]
    text: Annotated[str, Field(min_length=1, max_length=500)]
    deadline_ms: int


DOOR = Door(
    {
        # What any app tells it: what its surfaces show. Whose instance it is, is
        # checked against the sender's stamp (`_bridge`).
        "web_host.surface.push": accept("app.*", body=SurfacePush),
        # The chat app's word that its log changed: the pages read it again.
        "web_host.chat.changed": accept("app.chat", body=LookAgain),
        # An app's notification, past the gateway's checks and the user's consent: only the
        # gateway asks, so no app shows one on the page by itself.
        "web_host.notify": accept("capability_gateway", body=Notify),
        # The gateway's: how many pages are open or show a conversation, and a file an app
        # saved for the pages that do (`_uploads`).
        "web_host.pages": accept("capability_gateway", body=PagesAsked),
        "web_host.download": accept("capability_gateway", body=Download),
        # The capability gateway's word that a recording in a page ends (`_uploads`).
        "web_host.recording.stop": accept("capability_gateway", body=RecordingStop),
        # The app manager's word that the registry changed: the pages read it again, and
        # each page's surface socket is sent the surface in front.
        "web_host.registry.changed": accept("app_manager", body=LookAgain),
    }
)
