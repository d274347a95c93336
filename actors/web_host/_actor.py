"""The web host actor: a supervised process that serves the user's window in a browser.

It is a UI client, like the terminal chat: what the user does in the page goes to the host
actor through the supervisor's UI socket, and what the page shows is read from the chat
and registry apps' projections; the user's Save of an artifact it asks of the capability
gateway itself, to hand the page the name it was saved under (`_artifacts`). Of messages it
takes its apps' surface pushes (`_bridge`), the chat app's notice that its view changed
and the app manager's that the registry did
(`_changes`: the pages look again), and from the capability gateway its apps' notifications
for the open pages (`web_host.notify`, `_notifications`), its questions about the pages
(how many are open, or show a conversation: `web_host.pages`) and a file an app saved for
a page (`web_host.download`, `_uploads`); the file a user picks in a page for an app it
hands to the gateway (`_uploads`). It never talks to the AppServer and never reads the
AppServer's token. Killed, it is restarted by
its policy on the same port (kept in `DATA_DIR/web/endpoint.json` for this run), and open
pages reconnect to it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from actors.kernel import REPLY_LATER, Actor, Message, handles

from ._artifacts import Artifacts
from ._bridge import SurfacePushes, Surfaces
from ._changes import CHAT_CHANGED, REGISTRY_CHANGED, SAFETY_S, PageNotices
from ._notifications import NOTIFY, PAGES, PageNotifications
from ._state import start_run, write_endpoint, write_failure
from ._uploads import PagesAndUploads
from .door import DOOR, Download, LookAgain, Notify, PagesAsked, RecordingStop

log = logging.getLogger("lineup.web_host")


class WebHostActor(SurfacePushes, Actor):
    door = DOOR

    async def on_start(self) -> None:
        self.data_dir = Path(self.config["data_dir"])
        self.counters = {"pages": 0, "actions": 0, "refused": 0}
        kept, last = start_run(self.data_dir, self.boot_id)
        configured = int(self.config.get("port", 0))
        wanted = kept if kept is not None else configured
        # How long a page goes without a look when no notice comes (`_changes`).
        self.notices = PageNotices(safety_s=float(self.config.get("safety_look_s", SAFETY_S)))
        # The installed apps' surfaces it frames, and their bridge (`_bridge`).
        self.surfaces = Surfaces(self, self.data_dir, self.notices)
        self.nursery.start_soon(self.surfaces.keep_warm)
        self.notifications = PageNotifications()
        # Previews of the conversations' pictures and the user's saves (`_artifacts`).
        self.artifacts = Artifacts(self, self.data_dir)
        # The open pages by conversation, the files their users choose and what they record
        # (`_uploads`).
        self.pages = PagesAndUploads(self)
        # With no port asked for, the last run's is tried first, so that the address a
        # person keeps for this data dir stays the same while that port is free.
        reuse = kept is None and configured == 0 and last is not None
        if not (reuse and last is not None and await self._listen(last)):
            await self._listen(wanted, last_try=True)
        write_endpoint(self.data_dir, self.port, self.boot_id)
        log.info("the web host listens on 127.0.0.1:%d", self.port)

    async def _listen(self, port: int, *, last_try: bool = False) -> bool:
        """Serve on `port`; False if it cannot be had, unless it is the last try: then the
        reason is written where `lineup web url` reads it, and the actor crashes."""
        # The web server's libraries are loaded here, in this process only: the actors
        # forked beside it do not carry them.
        from ._server import build_app, serve  # noqa: PLC0415

        app = build_app(
            self.data_dir,
            self.counters,
            self.surfaces,
            self.notices,
            artifacts=self.artifacts,
            notifications=self.notifications,
            pages=self.pages,
        )
        failed: BaseException | None = None
        try:
            self.port, self.guard = await self.nursery.start(serve, app, port)
        except* OSError as cannot:  # the port is taken, most likely
            failed = cannot
        if failed is None:
            return True
        if not last_try:
            return False
        reason: BaseException = failed
        while isinstance(reason, BaseExceptionGroup):  # the server's nurseries nest it
            reason = reason.exceptions[0]
        detail = getattr(reason, "strerror", None) or str(reason)
        write_failure(self.data_dir, port, detail, self.boot_id)
        raise failed

    @handles(CHAT_CHANGED)
    async def _chat_changed(self, msg: Message[LookAgain]) -> Any:
        """Passed on to the page sockets; the answer says how many pages are open (with
        none, the chat says its changes at most once a second: `apps.chat._notices`)."""
        self.notices.chat.notice()
        return {"pages": self.notifications.pages}

    @handles(REGISTRY_CHANGED)
    async def _registry_changed(self, msg: Message[LookAgain]) -> None:
        self.notices.registry.notice()

    @handles(NOTIFY)
    async def _notify(self, msg: Message[Notify]) -> Any:
        """Shown on the open pages meanwhile; answered once a page showed it, or by its
        deadline: the actor goes on with other messages while the pages answer."""

        async def show() -> None:
            shown_as = await self.notifications.show(msg.body)
            await self.reply(msg.sender, msg.id, {"shown_as": shown_as or None})

        self.nursery.start_soon(show)
        return REPLY_LATER

    @handles(PAGES)
    async def _pages(self, msg: Message[PagesAsked]) -> Any:
        """How many pages are open, or show the conversation `conversation_id`: {`pages`}."""
        conversation = msg.body.get("conversation_id")
        if conversation is None:
            return {"pages": self.notifications.pages}
        return {"pages": self.pages.showing(str(conversation))}

    @handles("web_host.download")
    async def _download(self, msg: Message[Download]) -> Any:
        """A file the gateway saved in the runtime's downloads for the pages of a
        conversation, handed to each as a download: {`pages`} that got it."""
        name = str(msg.body["name"])
        href = self.artifacts.offer_file(name)
        return {"pages": await self.pages.hand_over(str(msg.body["conversation_id"]), name, href)}

    @handles("web_host.recording.stop")
    async def _recording_stop(self, msg: Message[RecordingStop]) -> None:
        """The gateway ends a recording: the pages of its conversation stop and send it."""
        await self.pages.tell_stop(str(msg.body["conversation_id"]), str(msg.body["request_id"]))

    def statistics_extra(self) -> dict[str, Any]:
        notices = getattr(self, "notices", None)
        return {
            "port": getattr(self, "port", None),
            **getattr(self, "counters", {}),
            "chat_notices": notices.chat.notices if notices is not None else 0,
            "registry_notices": notices.registry.notices if notices is not None else 0,
            "notifications_shown": self.notifications.shown
            if hasattr(self, "notifications")
            else 0,
            "refused_requests": getattr(getattr(self, "guard", None), "refused", 0),
            "surfaces": self.surfaces.statistics() if hasattr(self, "surfaces") else {},
            "artifacts": self.artifacts.statistics() if hasattr(self, "artifacts") else {},
            "files": self.pages.statistics() if hasattr(self, "pages") else {},
        }
