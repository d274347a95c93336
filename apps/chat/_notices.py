"""The chat's word to the web host that its view changed (`web_host.chat.changed`).

When the runtime runs a web host, the chat's configuration names it (`view_watcher`). After
its log changed, the chat calls it with a notice that carries nothing: the web host reads
the log itself, so a notice only says "look again". One notice at a time: it is asked
again under the same id until the web host answers (the mailbox keeps it once), and what
changes meanwhile makes one more after it. So a burst of changes costs two messages, and a
web host that is down holds one notice in its durable inbox, never the chat's sending
credits. At start the chat sends one anyway: a change its last incarnation committed may
have gone without its notice.

The web host answers with how many pages are open. With none, nothing waits on a notice
(a page that opens reads the log itself, and an open page looks again at least once a
second anyway), so the next notice goes no sooner than `QUIET_S` later: what changes in
that second costs one notice, not one each (an agent's tool call changes the view twice).
"""

from __future__ import annotations

import logging
from typing import Any, Final

import trio

from apps.sdk import CallFailed, RuntimeApp
from contracts import new_message_id

log = logging.getLogger("lineup.chat")

CHANGED: Final = "web_host.chat.changed"
QUIET_S: Final = 1.0  # between two notices while no page is open


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
                answer = await self.app.call_until_answered(
                    self.watcher, CHANGED, {}, id=new_message_id()
                )
            except CallFailed as failed:  # refused or dead: the next change says it again
                log.warning("the notice to %s failed: %s", self.watcher, failed)
                continue
            if isinstance(answer, dict) and answer.get("pages") == 0:
                await trio.sleep(QUIET_S)
