"""Words that something the pages show changed, passed on to every page socket.

Two writers tell the web host after their commit, each with no content:

- the chat app (`app.chat`, the only sender the door admits) after its log changed:
  `web_host.chat.changed`;
- the app manager (`app_manager`, the only sender the door admits) after its registry rows
  changed in its `app_manager.db`: `web_host.registry.changed`.

A notice says "look again", never what changed: each page socket then reads the chat's log
or the registry itself (`_views`, `_surfaces`), exactly as it would without notices. So a
notice can cost a look that finds nothing, never a wrong page.

The registry notice is a cast after each committed registry write (its own `app_manager.db`),
never a call: the app manager never waits on the web host, and a web host that is down
finds the notices in its durable inbox, one look each. Where the runtime runs a web host,
`actors.runtime_children.default_config` names it to the chat app (`view_watcher`) and to
the app manager (`registry_watcher`). On a notice every page socket reads SQLite's
`data_version` of the file and, if it moved, looks at what changed; a registry notice also
sends every surface socket the surface in front (`_bridge`).

Without a notice a page socket still looks once a second (`safety_look_s`, `SAFETY_S`), if
the file changed: a notice is another process's word, and a write no notice follows (the
link state, which the transport writes through the store a few times a run; a registry
change whose notice was lost when the app manager was killed between its commit and its
cast) would otherwise wait for the next change. Tests set it long to prove that notices
alone carry a change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import trio

CHAT_CHANGED: Final = "web_host.chat.changed"
REGISTRY_CHANGED: Final = "web_host.registry.changed"
# Without a notice the chat's log and the registry are looked at this often anyway: a change
# that no notice follows (its writer killed between its commit and its notice; a write that
# notices do not cover, as the link state the transport reports through the store) shows
# within this, whatever happens to notices. A look that finds the file unchanged is one
# `PRAGMA data_version`.
SAFETY_S: Final = 1.0


class Notices:
    """A broadcast of "look again" to every page socket of this process."""

    def __init__(self) -> None:
        self._next = trio.Event()
        self.notices = 0

    def notice(self) -> None:
        self.notices += 1
        self._next.set()
        self._next = trio.Event()

    def next_notice(self) -> trio.Event:
        """What the next notice sets. Take it before looking: a notice that comes while
        the page socket looks is then not missed."""
        return self._next


@dataclass(frozen=True)
class PageNotices:
    """What a page socket waits on: the chat's notices and the registry's, each for at most
    `safety_s` (then it looks anyway)."""

    chat: Notices = field(default_factory=Notices)
    registry: Notices = field(default_factory=Notices)
    safety_s: float = SAFETY_S
