"""What the web host takes: only what an app's process pushes to the surfaces the web host
shows for it. Otherwise it is a UI client kept alive by the supervisor: it speaks to the
host actor through the UI socket, like the terminal chat."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict
from typing_extensions import TypedDict

from actors.kernel import Door, accept


class SurfacePush(TypedDict):
    """An app's word to the surfaces of one of its instances (`_bridge`): a JSON merge
    patch of their state, or a revision of the instance's session data."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    instance_id: str
    kind: Literal["state", "session"]
    patch: NotRequired[dict[str, Any]]
    data: NotRequired[dict[str, Any] | None]
    revision: NotRequired[int]


DOOR = Door(
    {
        # The one thing an app tells it: what its surfaces show. Whose instance it is, is
        # checked against the sender's stamp (`_bridge`).
        "web_host.surface.push": accept("app.*", body=SurfacePush),
    }
)
