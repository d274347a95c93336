"""The chat's word to the web host that its view changed (`web_host.chat.changed`).

When the runtime runs a web host, the chat's configuration names it (`view_watcher`). After
its log changed, the chat calls it with a notice that carries nothing: the web host reads
the log itself, so a notice only says "look again". At most one notice is on its way at a
time, and what changes meanwhile makes one more after it: a burst of changes costs two
messages, and a web host that is down (its notices wait in its durable inbox) holds at
most one of them, never the chat's sending credits. At start the chat sends one anyway:
a change its last incarnation committed may have gone without its notice.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import trio

from apps.sdk import CallFailed, RuntimeApp

log = logging.getLogger("lineup.chat")

CHANGED: Final = "web_host.chat.changed"
# How long one notice may wait for the web host before the next one may go (a web host
# that is restarting answers it later; it is not withdrawn).
NOTICE_TIMEOUT_S: Final = 5.0


class ViewNotices:
    def __init__(self, app: RuntimeApp, watcher: str) -> None:
        self.app = app
        self.watcher = watcher
        self.due = trio.Event()
        self.due.set()  # at start: whatever the last incarnation left unsaid

    def changed(self, *_: Any) -> None:
        """A state listener (`sdk.state.subscribe`): the view changed."""
        self.due.set()

    async def run(self) -> None:
        while True:
            await self.due.wait()
            self.due = trio.Event()
            try:
                await self.app.call(self.watcher, CHANGED, {}, timeout=NOTICE_TIMEOUT_S)
            except CallFailed as failed:  # late or refused: the next change says it again
                log.debug("the notice to %s went unanswered: %s", self.watcher, failed)
