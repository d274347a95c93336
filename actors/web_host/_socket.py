"""One page's WebSocket: the page's actions in, what it shows out.

In: each frame is checked (`_inputs`) and a UI action or host intent goes to the host
actor through the supervisor's UI socket, as the terminal chat's do, with the message id
derived from the page's id for the action: an action the page sends again after a
reconnect (or after this process was killed) is the same message, which the mailbox keeps
once. The page hears `stored` (it is the runtime's now), `retry` (the runtime did not
answer: the page keeps it queued) or `refused` (one sentence; it acts on nothing). A `save`
of an artifact is the capability gateway's, asked by this process (`_artifacts`), while the
page's other actions go on; the page hears `saved` (the name and where to download it) or
`refused`. A `choose` (the user picked a file for a card of the page's that asks for one)
is answered with `upload`, a one-time address to POST the file to (`_uploads`), or
`refused`. A `record` (the user pressed "Start recording" on a card of the page's that asks
for one) is the user's yes, given to the capability gateway; the page hears `recording`, a
one-time address to POST the recording to with how long and how much it may be
(`_uploads`), or `refused`. A `talk` (the user pressed the chat's talk button, in a
conversation in audio mode) asks the gateway to record the user's message for the chat; the
page hears `recording` as for a card, or `refused`.

Out: after the page's `hello`, the chat items that differ from what it holds and the
conversation's mode, then every change as it happens (`view`), the app registry (`registry`)
and the runtime's link state (`status`), the apps' notifications the capability gateway asks
it to show (`notification`, which the page answers with `notified`: `_notifications`), a
`download` of a file an app saved for the page's conversation (`_uploads`), and
`record_stop` when the gateway ends a recording the page makes. The chat's
view is read again at each notice of the chat app (`_changes`) that finds its log changed
(SQLite's `data_version`), the registry and the link state at each notice of the app
manager; each also after a while without a notice (`SAFETY_S`), if its file changed.

Last, `stopped` when the web host is stopped because the runtime stops (`lineup stop`,
Ctrl-C): the page then says so at once instead of reconnecting to nothing.

Frames are JSON text of at most 64 K characters (256 KiB closes the socket), 20 a second
(bursts of 60). A frame that fails its checks gets `refused` with one sentence and acts on
nothing; 20 refusals in a row, or a frame before the hello, close the socket. The
conversation of an action is the page's (`hello`), never a field of the action; the
session is the web host's naming. What the agent or an app wrote leaves as data with its
control and invisible characters written out, and Markdown as a tree of allowed tags
(`_markdown`) that the page builds with `createElement` and `textContent`, never
`innerHTML`. A file is never a WebSocket frame (`_uploads`): the socket keeps its bound.

A `view` frame carries `pos`, `reset`, `items` (changed, each with its `order`; an agent
message's `speech` parts, a spoken message's `spoken`), `tasks` and `mode` (the
conversation's: `im`, `audio`); `registry` the apps, the focus stack, the default app and
the last operations; `status` the link state; `notification` {`id`, `app`, `title`,
`text`}; `download` {`name`, `href`}; `record_stop` {`interaction_id`}.

A look at the chat's log (`_views.ChatFollower`) reads only the events after the last one
it read, and again the user's actions it shows pending (the AppServer's verdict is the one
change the log makes in place that the page shows), and puts an item in the page's form
again only when it changed: an agent's message, which the view adds once and never
changes, is not even compared once shown, so a look at a conversation of 2,000 items costs
about a millisecond. The first look (the whole log) runs in a worker thread, the later
ones in the web host's event loop. Each page socket takes the notice it will wait for
before it reads the version, so one that comes during a look makes one more look after it.
An agent message is in the page 5-10 ms after the chat's log has it (`lineup bench web`).
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

import trio
from starlette.websockets import WebSocket, WebSocketDisconnect

from actors.app_manager.registry import RegistryReader
from actors.kernel import CallFailed, ControlError, KeptReader, derive_id, ui_request
from actors.store import RuntimeReader
from contracts import ContractError, file_wanted

from . import _inputs
from ._artifacts import Artifacts
from ._changes import PageNotices
from ._inputs import Choose, Hello, Record, Refused, Save, Talk
from ._notifications import PageNotifications
from ._uploads import PagesAndUploads, session_of
from ._views import RECENT_OPERATIONS, ChatFollower, fold_chat, link_state, registry

log = logging.getLogger("lineup.web_host")

HELLO_TIMEOUT_S: Final = 10.0
UI_TIMEOUT_S: Final = 5.0
# How long a page's goodbye may hold the web host's stop (the runtime waits 5 s for it).
GOODBYE_S: Final = 1.0
# A page sends a handful of frames a second at most; past this it is not a person.
RATE_PER_S: Final = 20.0
BURST: Final = 60.0
MAX_REFUSALS: Final = 20
MAX_SAVES: Final = 4  # saves of one page under way at once
TALK_REFUSALS: Final = frozenset(
    {"invalid_state", "permission_denied", "policy_denied", "unsupported_on_host", "rate_limited"}
)


@dataclass(frozen=True)
class _RuntimeFiles:
    """What a page shows of the runtime, each read from its owner's file kept open: the
    registry (the app manager's) and the link's state (the store's `runtime.db`)."""

    registry: RegistryReader
    runtime: RuntimeReader

    def changed(self) -> bool:
        # Both asked, so that each one's version is brought up to date.
        registry, runtime = self.registry.changed(), self.runtime.changed()
        return registry or runtime

    def close(self) -> None:
        self.registry.close()
        self.runtime.close()


class PageSocket:
    """One page's socket: its hello, then its actions in and the changes out, until it
    goes (or breaks the rules)."""

    def __init__(
        self,
        websocket: WebSocket,
        data_dir: Path,
        counters: dict[str, int],
        notices: PageNotices,
        *,
        artifacts: Artifacts,
        notifications: PageNotifications,
        pages: PagesAndUploads,
    ) -> None:
        self.ws = websocket
        self.notifications = notifications
        self.data_dir = data_dir
        self.counters = counters
        self.notices = notices
        self.artifacts = artifacts
        self.pages = pages
        self.saving = 0
        self.sending = trio.Lock()
        self.held: dict[str, Any] = {}
        self.tasks: list[Any] = []
        self.registry: dict[str, Any] | None = None
        self.mode: str | None = None  # the conversation's mode the page was last sent
        self.link: str | None = None
        self.tokens = BURST
        self.last = trio.current_time()
        self.refusals = 0

    async def send(self, frame: dict[str, Any]) -> None:
        async with self.sending:
            await self.ws.send_text(json.dumps(frame, ensure_ascii=False))

    async def receive(self) -> str | None:
        """The next text frame; None once the page is gone."""
        message = await self.ws.receive()
        if message["type"] == "websocket.disconnect":
            return None
        text = message.get("text")
        return text if isinstance(text, str) else ""

    async def run(self) -> None:
        await self.ws.accept()
        first: str | None = None
        with trio.move_on_after(HELLO_TIMEOUT_S) as silent:
            first = await self.receive()
        if first is None:  # gone already, or silent for too long
            if silent.cancelled_caught:
                await self.ws.close(code=1008)
            return
        hello = await self._hello(first)
        if hello is None:
            await self.ws.close(code=1008)
            return
        session = f"web-{hello.page}"
        self.counters["pages"] += 1
        self.pages.opened(hello.conversation, self)
        try:
            with contextlib.suppress(ControlError):
                await self._ui("host.session.open", {"session_id": session, "kind": "web"})
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._push, hello)
                with self.notifications.page(self.send):  # the apps' notifications, shown
                    broke_the_rules = await self._take_actions(hello, session)
                nursery.cancel_scope.cancel()
            if broke_the_rules:  # too fast, or too many refusals in a row
                await self.ws.close(code=1008)
        except* trio.Cancelled:  # this process is being stopped
            with trio.CancelScope(shield=True), trio.move_on_after(GOODBYE_S):
                await self._goodbye()
            raise
        finally:
            self.counters["pages"] -= 1
            self.pages.closed(hello.conversation, self)
            with contextlib.suppress(ControlError), trio.CancelScope(shield=True):
                await self._ui("host.session.close", {"session_id": session})

    async def _goodbye(self) -> None:
        """The page hears `stopped` if the runtime is stopping (its supervisor says so on
        the UI socket); a web host stopped alone, or killed, says nothing, and the page
        reconnects until it gives up."""
        call = partial(ui_request, self.data_dir, {"type": "status"}, timeout=GOODBYE_S)
        try:
            status = await trio.to_thread.run_sync(call)
        except ControlError:
            return
        if status.get("state") == "stopping":
            with contextlib.suppress(Exception):  # the page may be gone already
                await self.send({"t": "stopped"})

    async def _hello(self, raw: str | None) -> Hello | None:
        if raw is None:
            return None
        try:
            return _inputs.hello(_inputs.parse_frame(raw))
        except Refused as refusal:
            self.counters["refused"] += 1
            await self.send({"t": "refused", "error": str(refusal)})
            return None

    # -- in --------------------------------------------------------------------------------

    def _within_rate(self) -> bool:
        now = trio.current_time()
        self.tokens = min(BURST, self.tokens + (now - self.last) * RATE_PER_S)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    async def _take_actions(self, hello: Hello, session: str) -> bool:
        """Take the page's actions until it goes (False) or breaks the rules (True); its
        saves under way end with it."""
        async with trio.open_nursery() as saves:
            broke_the_rules = await self._each_action(hello, session, saves)
            saves.cancel_scope.cancel()
        return broke_the_rules

    async def _each_action(self, hello: Hello, session: str, saves: trio.Nursery) -> bool:
        while (raw := await self.receive()) is not None:
            if not self._within_rate() or self.refusals > MAX_REFUSALS:
                return True
            frame: dict[str, Any] = {}
            try:
                frame = _inputs.parse_frame(raw)
                if frame["t"] == "notified":  # the page showed an app's notification
                    self.notifications.notified(*_inputs.notified(frame))
                    self.refusals = 0
                    continue
                if frame["t"] == "save":
                    saves.start_soon(self._save, _inputs.save(frame), hello.conversation)
                    self.refusals = 0
                    continue
                if frame["t"] == "choose":
                    await self.send(self._upload(_inputs.choose(frame)))
                    self.refusals = 0
                    continue
                if frame["t"] == "record":
                    saves.start_soon(self._record, _inputs.record(frame))
                    self.refusals = 0
                    continue
                if frame["t"] == "talk":
                    saves.start_soon(self._talk, _inputs.talk(frame), hello.conversation)
                    self.refusals = 0
                    continue
                action = _inputs.action(frame, hello.conversation)
            except Refused as refusal:
                self.refusals += 1
                self.counters["refused"] += 1
                named = frame.get("client_id")  # so the page can drop that action
                client_id = named if isinstance(named, str) else None
                await self.send({"t": "refused", "client_id": client_id, "error": str(refusal)})
                continue
            self.refusals = 0
            body = {"session_id": session, **action.body}
            try:
                await self._ui(action.message_type, body, derive_id(action.client_id, 0))
            except ControlError as exc:
                reply = {"t": "retry", "client_id": action.client_id}
                if str(exc).startswith("refused"):
                    reply = {
                        "t": "refused",
                        "client_id": action.client_id,
                        "error": "The runtime refused this action: reload the page.",
                    }
                    log.warning("the UI socket refused a page's action: %s", exc)
                await self.send(reply)
                continue
            self.counters["actions"] += 1
            await self.send({"t": "stored", "client_id": action.client_id})
        return False

    async def _save(self, request: Save, conversation: str) -> None:
        """The user's Save of an artifact of the page's conversation: `saved`, or `refused`
        with the sentence the page shows beside the button."""
        answer: dict[str, Any] = {"client_id": request.client_id}
        if self.saving >= MAX_SAVES:
            answer.update(t="refused", error="Other saves are under way: wait for them.")
            await self.send(answer)
            return
        self.saving += 1
        try:
            saved = await self.artifacts.save(conversation, request.artifact_id, request.client_id)
            answer.update(t="saved", **saved)
        except Refused as refusal:
            answer.update(t="refused", error=str(refusal))
        finally:
            self.saving -= 1
        await self.send(answer)

    def _upload(self, request: Choose) -> dict[str, Any]:
        """Where the page sends the file the user picked for a card: `upload` {`href`},
        when the card is one the page shows open and asking for a file; else `refused`."""
        answer: dict[str, Any] = {"client_id": request.client_id}
        item = self.held.get(request.interaction_id) or {}
        ask = item.get("ask") or {}
        chooser = ask.get("chooser")
        session = session_of(self.ws)
        wanted = None
        if ask.get("open") and isinstance(chooser, dict) and session:
            with contextlib.suppress(ContractError):
                wanted = file_wanted(
                    {"accept": chooser.get("accept"), "max_bytes": chooser.get("max_bytes")}
                )
        if wanted is None or session is None:
            self.counters["refused"] += 1
            error = "This request does not wait for a file any more."
            return {**answer, "t": "refused", "error": error}
        href = self.pages.mint(request.interaction_id, session, wanted)
        return {**answer, "t": "upload", "href": href}

    async def _record(self, request: Record) -> None:
        """The user's yes to a recording on a card the page shows open and asking for one:
        `recording` {`href`, `max_ms`, `max_bytes`} once the gateway started it; else
        `refused` with the sentence the page shows on the card."""
        answer: dict[str, Any] = {"client_id": request.client_id}
        item = self.held.get(request.interaction_id) or {}
        ask = item.get("ask") or {}
        session = session_of(self.ws)
        if not ask.get("open") or not isinstance(ask.get("recorder"), dict) or not session:
            self.counters["refused"] += 1
            error = "This request does not wait for a recording any more."
            await self.send({**answer, "t": "refused", "error": error})
            return
        try:
            started = await self.pages.start_recording(request.interaction_id, session)
        except CallFailed as failed:
            self.counters["refused"] += 1
            error = failed.detail if failed.code == "invalid_state" else ""
            error = error or "The runtime did not start the recording: try again."
            await self.send({**answer, "t": "refused", "error": error})
            return
        await self.send({**answer, "t": "recording", **started})

    async def _talk(self, request: Talk, conversation: str) -> None:
        """The user's push-to-talk, in a conversation the page shows in audio mode:
        `recording` {`href`, `max_ms`, `max_bytes`, `request_id`} once the gateway started
        it for the chat; else `refused` with the sentence the page shows."""
        answer: dict[str, Any] = {"client_id": request.client_id}
        session = session_of(self.ws)
        if self.mode != "audio" or not session:
            self.counters["refused"] += 1
            error = "Voice mode is off in this conversation: turn it on to talk."
            await self.send({**answer, "t": "refused", "error": error})
            return
        try:
            started = await self.pages.start_talk(conversation, request.client_id, session)
        except CallFailed as failed:
            self.counters["refused"] += 1
            # The gateway's refusals of a press are sentences for the person.
            error = failed.detail if failed.code in TALK_REFUSALS else ""
            error = error or "The runtime did not start the recording: try again."
            await self.send({**answer, "t": "refused", "error": error})
            return
        await self.send({**answer, "t": "recording", **started})

    async def _ui(self, message_type: str, body: dict[str, Any], message_id: str = "") -> None:
        request: dict[str, Any] = {"type": message_type, "body": body}
        if message_id:
            request["id"] = message_id
        call = partial(ui_request, self.data_dir, request, timeout=UI_TIMEOUT_S)
        await trio.to_thread.run_sync(call)

    # -- out -------------------------------------------------------------------------------

    async def _push(self, hello: Hello) -> None:
        chat_log = KeptReader(self.data_dir / "apps" / "chat" / "app.db")
        runtime_db = _RuntimeFiles(RegistryReader(self.data_dir), RuntimeReader(self.data_dir))
        try:
            # First the notice to wait for, then the version: a write during the fold
            # below is seen next time.
            look = self.notices.chat.next_notice()
            chat_log.changed()
            fold = await trio.to_thread.run_sync(
                fold_chat, self.data_dir, hello.conversation, hello.since
            )
            reset = hello.since > fold.pos
            items = (
                list(fold.items.values())
                if reset
                else fold.changed_since(fold.before, set(hello.still_open))
            )
            # What the page holds is known before it is sent: a page answering it at once
            # (a file picked, a recording started, on a card it shows) is judged by it.
            self.held = fold.items
            await self._send_view(fold.pos, items, fold.tasks, fold.mode, reset=reset, always=True)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._follow_runtime, runtime_db)
                await self._follow_chat(hello, chat_log, look)
        finally:
            chat_log.close()
            runtime_db.close()

    async def _follow_chat(self, hello: Hello, chat_log: KeptReader, look: trio.Event) -> None:
        """At each notice (or after `safety_s` without one), what changed in the chat's
        view since the page's last one; notices during a look make one more after it. The
        first look reads the whole log, in a worker thread; each later one what came after
        it, in the event loop: about a millisecond, at 2,000 items too (`ChatFollower`),
        where a worker thread's round trip costs more on a busy machine."""
        follower = ChatFollower(self.data_dir, hello.conversation)
        fold = await trio.to_thread.run_sync(follower.look)
        while True:
            items = fold.changed_since(self.held, set())
            self.held = fold.items
            await self._send_view(fold.pos, items, fold.tasks, fold.mode)
            while True:
                with trio.move_on_after(self.notices.safety_s):
                    await look.wait()
                look = self.notices.chat.next_notice()
                if chat_log.changed():
                    break
            fold = follower.look()

    async def _follow_runtime(self, runtime_db: _RuntimeFiles) -> None:
        """The registry and the link state: at each notice of the app manager (or after
        `safety_s` without one), if the app manager's file or `runtime.db` changed."""
        while True:
            # The notice to wait for first, then the version: a write during the read
            # below makes one more look.
            look = self.notices.registry.next_notice()
            if runtime_db.changed() or self.registry is None:
                await self._send_registry(runtime_db)
            with trio.move_on_after(self.notices.safety_s):
                await look.wait()

    async def _send_view(
        self,
        pos: int,
        items: list[Any],
        tasks: list[Any],
        mode: str,
        *,
        reset: bool = False,
        always: bool = False,
    ) -> None:
        if not (items or tasks != self.tasks or mode != self.mode or always):
            return
        self.tasks, self.mode = tasks, mode
        frame = {"t": "view", "pos": pos, "reset": reset, "items": items, "tasks": tasks}
        await self.send({**frame, "mode": mode})

    async def _send_registry(self, runtime_db: _RuntimeFiles) -> None:
        # Read in the event loop: on the kept connection a read is ≈1 ms, less than a
        # worker thread's round trip on a busy machine (tens of ms).
        snapshot = registry(runtime_db.registry.apps(operations=RECENT_OPERATIONS, ended=False))
        link = link_state(runtime_db.runtime.lifecycle())
        if snapshot != self.registry:
            self.registry = snapshot
            await self.send({"t": "registry", **snapshot})
        if link != self.link:
            self.link = link
            await self.send({"t": "status", "link": link})


async def page_socket(
    websocket: WebSocket,
    data_dir: Path,
    counters: dict[str, int],
    notices: PageNotices,
    *,
    artifacts: Artifacts,
    notifications: PageNotifications,
    pages: PagesAndUploads,
) -> None:
    with contextlib.suppress(WebSocketDisconnect):
        socket = PageSocket(
            websocket,
            data_dir,
            counters,
            notices,
            artifacts=artifacts,
            notifications=notifications,
            pages=pages,
        )
        await socket.run()
