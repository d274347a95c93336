"""The apps' notifications on the open pages.

The capability gateway, where the desktop has no notification service for it, asks the
web host to show an app's notification (`web_host.notify`, a call admitted from the gateway
only: it has passed the gateway's checks and the user's consent). Every page socket that has
said hello is handed it (`notification`); a page shows it with the browser's Notification API
where the user allowed that, else as a toast of its own, and says which (`notified`: `system`
or `toast`). The first page's word is the answer; none by the notification's deadline, or no
page open, is "not shown", and the gateway tries the next way. A notification asked after its
deadline (a call that waited out a restart of the web host) is shown nowhere: the gateway has
taken another way by then.

In the page (`static/notify.js`) a browser notification is tagged with the request's key,
so several open pages make one; a toast is a note of its own, top right, the newest first,
the last three kept until closed (`#notes`). The page asks the browser for permission only
when the user presses *Allow notifications* in the header, shown while the browser has not
been told either way, never on load. The text is text in both (`textContent`; a browser
notification's body is plain text).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import trio

from apps.chat import visible

NOTIFY: Final = "web_host.notify"
PAGES: Final = "web_host.pages"
SHOWN_AS: Final = frozenset({"system", "toast"})
MAX_NOTIFICATION_ID: Final = 160  # the gateway's key of a request: app scope / the app's id

Send = Callable[[dict[str, Any]], Awaitable[None]]


class PageNotifications:
    """The open pages' senders, and the notifications waiting for a page to show them."""

    def __init__(self) -> None:
        self._pages: dict[int, Send] = {}
        self._waiting: dict[str, tuple[trio.Event, list[str]]] = {}
        self.shown = 0

    @property
    def pages(self) -> int:
        return len(self._pages)

    @contextlib.contextmanager
    def page(self, send: Send) -> Any:
        """While open, the page (its socket's `send`) is handed every notification."""
        key = id(send)
        self._pages[key] = send
        try:
            yield
        finally:
            self._pages.pop(key, None)

    def notified(self, notification_id: str, shown_as: str) -> None:
        """A page's word that it showed the notification, and how; a word about one that
        waits no longer is dropped."""
        waiting = self._waiting.get(notification_id)
        if waiting is not None and not waiting[0].is_set():
            waiting[1].append(shown_as)
            waiting[0].set()

    async def show(self, body: Mapping[str, Any]) -> str:
        """How the first page showed it (`system`, `toast`), or "" if none did by its
        deadline (`deadline_ms`, wall clock)."""
        left_s = body["deadline_ms"] / 1000 - time.time()
        key = str(body["notification_id"])
        if left_s <= 0 or not self._pages or key in self._waiting:
            return ""
        frame = {
            "t": "notification",
            "id": key,
            # The app's words as data, their control and invisible characters written out.
            "app": visible(str(body["app"]), newlines=False),
            "title": visible(str(body["title"]), newlines=False),
            "text": visible(str(body["text"])),
        }
        event, how = trio.Event(), list[str]()
        self._waiting[key] = (event, how)
        try:
            with trio.move_on_after(left_s):
                async with trio.open_nursery() as nursery:  # a slow page holds up no other
                    for send in list(self._pages.values()):
                        nursery.start_soon(_quietly, send, frame)
                    await event.wait()
        finally:
            self._waiting.pop(key, None)
        if how:
            self.shown += 1
        return how[0] if how else ""


async def _quietly(send: Send, frame: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):  # a page that went meanwhile: the others answer
        await send(frame)
