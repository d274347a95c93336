"""The chat app's word that its view changed, passed on to every page socket.

The chat app (`app.chat`, the only sender the door admits) calls the web host after its
log changed: `web_host.chat.changed`, with no content. A notice says "look again", never
what changed: each page socket then reads the chat's log itself (`_views`), exactly as it
would without notices. So a notice can cost a look that finds nothing, never a wrong page.
"""

from __future__ import annotations

import trio

CHANGED = "web_host.chat.changed"


class ChatChanges:
    """A broadcast of "look again" to every page socket of this process."""

    def __init__(self) -> None:
        self._next = trio.Event()
        self.notices = 0

    def notice(self) -> None:
        self.notices += 1
        self._next.set()
        self._next = trio.Event()

    def next_notice(self) -> trio.Event:
        """What the next notice sets. Take it before looking at the log: a notice that
        comes while the page socket looks is then not missed."""
        return self._next
