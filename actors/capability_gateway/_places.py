"""Where a `file.save` ends (mixed into `CapabilityGatewayActor`).

When the web host has a page open that shows the request's conversation, the file goes to
that page's browser: it is kept in the runtime's downloads, where the web host serves it,
and the web host hands it to the page as a download (`web_host.download`: the page clicks
a link to `/saved/TOKEN`). Otherwise it is saved into the folder the gateway was given:
the user's downloads folder when its config says `downloads: "user"` (as `lineup run`
starts it), else the runtime's downloads (`DATA_DIR/downloads/`).

The place is decided before the effect is recorded as started (`web_host.pages`, asked
briefly: a web host that does not answer has no page), so a repeat after a crash writes the
same file in the same place. The audit row of the effect says which place served.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Final

from actors.kernel import Actor, CallFailed, derive_id

from ._files import Folder

log = logging.getLogger("lineup.capability_gateway")

PAGE: Final = "page"  # the browser of a page that shows the conversation
FOLDER: Final = "folder"  # the folder the gateway was given
PAGES_TIMEOUT_S: Final = 1.0
HAND_OVER_SLOT: Final = 4  # the hand-over's id, derived from the request's key


class SavePlaces(Actor):
    """The gateway's choice of a place for a `file.save`, and its hand-over to a page."""

    data_dir: Path
    folder: Folder
    page_host: str | None  # the actor that shows pages (the web host), if the runtime has one
    call_timeout: float

    async def _place(self, row: dict[str, Any]) -> str:
        """`PAGE` when a page shows the request's conversation now, else `FOLDER`."""
        if self.page_host is None:
            return FOLDER
        try:
            reply = await self.call(
                self.page_host,
                "web_host.pages",
                {"conversation_id": row["conversation_id"]},
                timeout=PAGES_TIMEOUT_S,
            )
        except CallFailed as exc:  # down, or slow: no page gets it
            log.info("no page for %s: the web host did not answer (%s)", row["request_id"], exc)
            return FOLDER
        return PAGE if int(reply.get("pages") or 0) > 0 else FOLDER

    def place_folder(self, place: str) -> Folder:
        return Folder.runtime(self.data_dir) if place == PAGE else self.folder

    async def _saved_where(self, row: dict[str, Any], place: str, name: str) -> str:
        """The audit's words for where the file `name` went; for a page, handed to it."""
        if place != PAGE:
            whose = "the runtime's downloads" if self.folder.own else "the user's downloads folder"
            return f"saved as {name} in {whose}"
        assert self.page_host is not None, "a page is the place only with a page host"
        try:
            reply = await self.call(
                self.page_host,
                "web_host.download",
                {"conversation_id": row["conversation_id"], "name": name},
                timeout=self.call_timeout * 5,
                id=derive_id(row["request_id"], HAND_OVER_SLOT),
            )
            pages = int(reply.get("pages") or 0)
        except CallFailed as exc:
            log.warning("%s not handed to a page: %s", row["request_id"], exc)
            pages = 0
        if pages == 0:  # the page went meanwhile: the file waits in the runtime's downloads
            return f"saved as {name} in the runtime's downloads: no page was left to take it"
        return f"handed as {name} to the browser of the page showing the conversation"
