"""Where a `file.save` ends.

When the web host has a page open that shows the request's conversation, the file goes to
that page's browser: it is kept in the runtime's downloads, where the web host serves it,
and the web host hands it to the page as a download (`web_host.download`: the page clicks
a link to `/saved/TOKEN`). Otherwise it is saved into the folder the gateway was given:
the user's downloads folder when its config says `downloads: "user"` (as `lineup run`
starts it), else the runtime's downloads (`DATA_DIR/downloads/`).

The place is decided before the effect is recorded as started (`web_host.pages`, asked
briefly: a web host that does not answer has no page; `SavePlaces`, mixed into
`CapabilityGatewayActor`), so a repeat after a crash writes the same file in the same
place. The provider (`_providers`) saves it there and hands it over; what served it
(`saved_by`, `handed_by`) is the effect's audit row, and what the user's settings show.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from actors.kernel import Actor, CallFailed, derive_id

from ._files import Folder
from ._notifications import PAGES

log = logging.getLogger("lineup.capability_gateway")

PAGE: Final = "page"  # the browser of a page that shows the conversation
FOLDER: Final = "folder"  # the folder the gateway was given
DOWNLOAD: Final = "web_host.download"
PAGES_TIMEOUT_S: Final = 1.0
HAND_OVER_SLOT: Final = 4  # the hand-over's id, derived from the request's key
# The gateway's hand-over of a saved file to the pages of a conversation: the request's
# key and {`conversation_id`, `name`} → how many pages took it.
HandOver = Callable[[str, dict[str, Any]], Awaitable[int]]


def saved_by(folder: Folder, name: str = "") -> str:
    """How a file saved into `folder` (as `name`, when known) is served, in words."""
    whose = "the runtime's downloads" if folder.own else "the user's downloads folder"
    return f"saved as {name} in {whose}" if name else f"saved in {whose} ({folder.path})"


def handed_by(name: str, pages: int) -> str:
    """How a file handed to `pages` pages of its conversation is served, in words."""
    if pages == 0:  # the page went meanwhile: the file waits in the runtime's downloads
        return f"saved as {name} in the runtime's downloads: no page was left to take it"
    by = "the open page" if pages == 1 else f"the {pages} open pages"
    return f"downloaded as {name} by {by} showing the conversation"


class SavePlaces(Actor):
    """The gateway's choice of a place for a `file.save`, and its hand-over to a page."""

    data_dir: Path
    folder: Folder
    web_host: str | None  # the actor that shows pages, if the runtime has one
    call_timeout: float

    async def _place(self, row: dict[str, Any]) -> str:
        """`PAGE` when a page shows the request's conversation now, else `FOLDER`."""
        if self.web_host is None:
            return FOLDER
        try:
            reply = await self.call(
                self.web_host,
                PAGES,
                {"conversation_id": row["conversation_id"]},
                timeout=PAGES_TIMEOUT_S,
            )
        except CallFailed as exc:  # down, or slow: no page gets it
            log.info("no page for %s: the web host did not answer (%s)", row["request_id"], exc)
            return FOLDER
        return PAGE if int(reply.get("pages") or 0) > 0 else FOLDER

    def place_folder(self, place: str) -> Folder:
        return Folder.runtime(self.data_dir) if place == PAGE else self.folder

    async def _hand_over(self, key: str, body: dict[str, Any]) -> int:
        """The saved file `body` names handed to the pages of its conversation: how many
        took it (0 where none is left, or the web host did not answer)."""
        assert self.web_host is not None, "a page is the place only with a web host"
        try:
            reply = await self.call(
                self.web_host,
                DOWNLOAD,
                body,
                timeout=self.call_timeout * 5,
                id=derive_id(key, HAND_OVER_SLOT),
            )
        except CallFailed as exc:
            log.warning("%s not handed to a page: %s", key, exc)
            return 0
        return int(reply.get("pages") or 0)
