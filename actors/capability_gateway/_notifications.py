"""`notification.show`: an app's notification shown once, where the user will see it.

Three ways, tried in this order; the first that shows it is the one that served, named in
the effect's audit row (and what `lineup settings show` says the host would use now):

1. `desktop`: the session bus's notification service (freedesktop `Notify`, app name
   "LineUp", the summary the app's title and the notification's, the body its text), where
   `DBUS_SESSION_BUS_ADDRESS` is set and a service owns `org.freedesktop.Notifications` (or
   the bus can start one). A body is escaped when the service reads markup in bodies, so an
   app's `<b>` or `<a href>` is shown as the characters it is; a summary is plain text.
2. `page`: an open page of the web host, which shows it with the browser's Notification
   API, or as a toast of its own where the user has not allowed that. The web host answers
   once a page has shown it; no page open, or no answer by the deadline, is not shown.
3. `terminal`: a line in `DATA_DIR/notifications.jsonl`, which the terminal chat prints
   with the bell. The file keeps the last `KEEP` notifications (the oldest dropped), each
   numbered (`seq`), rewritten whole in a temporary file and renamed into place, so a
   reader never sees half of one and follows by number, not by offset.

The desktop's way gives up after 3 s without an answer (no bus, no service, a refusal: not
shown, the next way is tried); the page's is a call to the web host (`web_host.notify`,
from the gateway only, where its config names a `web_host`) with a deadline 2 s ahead.
Shown twice is seen twice, so the effect is not repeatable: a gateway killed after showing
it ends it `in_doubt` (tested on a real session bus with dunst,
`tests/capabilities/test_desktop.py`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final
from xml.sax.saxutils import escape

import trio
from jeepney import DBusAddress, DBusErrorResponse, new_method_call
from jeepney.bus_messages import message_bus
from jeepney.io.common import RouterClosed
from jeepney.io.trio import open_dbus_router
from jeepney.wrappers import unwrap_msg

from contracts import replace_file

log = logging.getLogger("lineup.capability_gateway")

NOTIFICATIONS_FILE: Final = "notifications.jsonl"
KEEP: Final = 100  # notifications the terminal's file keeps, the newest
APP_NAME: Final = "LineUp"
DESKTOP_TIMEOUT_S: Final = 3.0
# How long an open page has to show a notification before the next way is tried: a page
# that is open answers within milliseconds.
PAGE_WAIT_S: Final = 2.0
SERVICE: Final = DBusAddress(
    "/org/freedesktop/Notifications",
    bus_name="org.freedesktop.Notifications",
    interface="org.freedesktop.Notifications",
)

# What a bus that is missing, refuses, breaks or is slow raises (ValueError: an address or
# authentication it cannot use): the next way is tried.
_BUS_FAILURES: Final = (
    OSError,
    ValueError,
    DBusErrorResponse,
    RouterClosed,
    trio.BrokenResourceError,
    trio.TooSlowError,
)
# What the gateway asks the web host (its door declares the bodies): show a notification on
# the open pages, and how many are open.
NOTIFY: Final = "web_host.notify"
PAGES: Final = "web_host.pages"
# The gateway's call to the web host: the body of `web_host.notify` → its reply.
PageCall = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def summary(app_title: str, title: str) -> str:
    return f"{app_title}: {title}" if title else app_title


# -- desktop -----------------------------------------------------------------------------------


async def _service(router: Any) -> str | None:
    """The name of the bus's notification service, or None where there is none."""
    name = SERVICE.bus_name
    owned = unwrap_msg(await router.send_and_get_reply(message_bus.NameHasOwner(name)))[0]
    if not owned:
        startable = unwrap_msg(await router.send_and_get_reply(message_bus.ListActivatableNames()))
        if name not in startable[0]:
            return None
    info = new_method_call(SERVICE, "GetServerInformation")
    return str(unwrap_msg(await router.send_and_get_reply(info))[0])


async def _notify(router: Any, head: str, text: str) -> str | None:
    service = await _service(router)
    if service is None:
        return None
    asked = new_method_call(SERVICE, "GetCapabilities")
    reads_markup = "body-markup" in unwrap_msg(await router.send_and_get_reply(asked))[0]
    body = escape(text) if reads_markup else text
    notify = new_method_call(
        SERVICE, "Notify", "susssasa{sv}i", (APP_NAME, 0, "", head, body, [], {}, -1)
    )
    unwrap_msg(await router.send_and_get_reply(notify))
    return service


async def _on_bus(
    env: Mapping[str, str], talk: Callable[[Any], Awaitable[str | None]]
) -> str | None:
    """`talk` to the session bus; None where there is no bus, or it fails (logged)."""
    address = env.get("DBUS_SESSION_BUS_ADDRESS")
    if not address:
        return None
    try:
        with trio.fail_after(DESKTOP_TIMEOUT_S):
            async with open_dbus_router(address) as router:
                return await talk(router)
    except _BUS_FAILURES as exc:
        log.info("the session bus did not serve a notification: %s", exc)
        return None


async def desktop_service(env: Mapping[str, str]) -> str | None:
    """The desktop's notification service on the session bus (its name), or None."""
    return await _on_bus(env, _service)


async def show_on_desktop(env: Mapping[str, str], head: str, text: str) -> str | None:
    """The notification shown by the desktop's service: its name; None where there is no
    service to show it (nothing was shown then)."""
    return await _on_bus(env, lambda router: _notify(router, head, text))


# -- page --------------------------------------------------------------------------------------


async def show_on_page(call: PageCall, key: str, app_title: str, input: dict[str, Any]) -> str:
    """How an open page showed it (`system` or `toast`); "" where no page did."""
    body = {
        "notification_id": key,
        "app": app_title,
        "title": str(input.get("title") or ""),
        "text": str(input["text"]),
        "deadline_ms": int((time.time() + PAGE_WAIT_S) * 1000),
    }
    try:
        reply = await call(body)
    except Exception as exc:  # no web host, or one that did not answer: no page showed it
        log.info("no page showed a notification: %s", exc)
        return ""
    return str(reply.get("shown_as") or "")


# -- terminal ----------------------------------------------------------------------------------


def _kept(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    kept = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("seq"), int):
            kept.append(record)
    return kept


def write_for_terminal(data_dir: Path, record: dict[str, Any]) -> int:
    """`record` kept for the terminal chat, with the oldest past `KEEP` dropped: its number."""
    path = data_dir / NOTIFICATIONS_FILE
    kept = _kept(path)
    seq = (kept[-1]["seq"] + 1) if kept else 1
    kept = [*kept[-(KEEP - 1) :], {**record, "seq": seq}]
    replace_file(path, "".join(json.dumps(note, ensure_ascii=False) + "\n" for note in kept))
    return seq


def read_notifications(data_dir: Path, after: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The notifications kept for the terminal numbered past `after`, and the last number:
    what a UI polls to show new ones (each once). A file begun anew (its numbers below
    `after`) is read from its start."""
    kept = _kept(Path(data_dir) / NOTIFICATIONS_FILE)
    last = kept[-1]["seq"] if kept else 0
    if last < after:
        after = 0
    return [note for note in kept if note["seq"] > after], last
