"""The web host actor: a supervised process that serves the user's window in a browser.

It is a UI client, like the terminal chat: what the user does in the page goes to the host
actor through the supervisor's UI socket, and what the page shows is read from the chat
and registry apps' projections. Of messages it takes its apps' surface pushes (`_bridge`)
and the chat app's notice that its view changed (`_changes`: the pages look again); it
never talks to the AppServer and never reads the AppServer's token. Killed, it is restarted by
its policy on the same port (kept in `DATA_DIR/web/endpoint.json` for this run), and open
pages reconnect to it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from actors.kernel import Actor, Message, handles

from ._bridge import SurfacePushes, Surfaces
from ._changes import CHANGED, ChatChanges
from ._state import start_run, write_endpoint, write_failure
from .door import DOOR

log = logging.getLogger("lineup.web_host")


class WebHostActor(SurfacePushes, Actor):
    door = DOOR

    async def on_start(self) -> None:
        # The web server's libraries are loaded here, in this process only: the actors
        # forked beside it do not carry them.
        from ._server import serve  # noqa: PLC0415

        self.data_dir = Path(self.config["data_dir"])
        self.counters = {"pages": 0, "actions": 0, "refused": 0}
        kept = start_run(self.data_dir, self.boot_id)
        wanted = kept if kept is not None else int(self.config.get("port", 0))
        # The installed apps' surfaces it frames, and their bridge (`_bridge`).
        self.surfaces = Surfaces(self, self.data_dir)
        self.chat_changes = ChatChanges()
        try:
            self.port, self.guard = await self.nursery.start(
                serve, self.data_dir, wanted, self.counters, self.surfaces, self.chat_changes
            )
        except* OSError as cannot:  # the port is taken, most likely: say so, then crash
            reason: BaseException = cannot
            while isinstance(reason, BaseExceptionGroup):  # the server's nurseries nest it
                reason = reason.exceptions[0]
            detail = getattr(reason, "strerror", None) or str(reason)
            write_failure(self.data_dir, wanted, detail, self.boot_id)
            raise
        write_endpoint(self.data_dir, self.port, self.boot_id)
        log.info("the web host listens on 127.0.0.1:%d", self.port)

    @handles(CHANGED)
    async def _chat_changed(self, msg: Message) -> None:
        self.chat_changes.notice()

    def statistics_extra(self) -> dict[str, Any]:
        changes = getattr(self, "chat_changes", None)
        return {
            "port": getattr(self, "port", None),
            **getattr(self, "counters", {}),
            "chat_notices": changes.notices if changes is not None else 0,
            "refused_requests": getattr(getattr(self, "guard", None), "refused", 0),
            "surfaces": self.surfaces.statistics() if hasattr(self, "surfaces") else {},
        }
