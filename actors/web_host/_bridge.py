"""The web host's side of the surface bridge: a page's surface socket, and the relay.

The page frames a surface and checks every message the frame posts (`static/surfaces.js`);
what passes comes here on the page's surface socket (`/surface-socket`, behind the same
access rule as the page's own) and is checked again (`check_bridge_text`): the page is
the user's, but nothing a browser sends is trusted. The app's identity is never read from
a message: it is the instance the token names, which this socket opened. Then it becomes
one message to the app's process, `app.surface.request`, a call whose sender is this
actor (the app's door takes the type from `web_host` only), and the reply goes back to
the frame. The app's process pushes to its surfaces (`web_host.surface.push`: a state
patch, a revision of session data, a tool call handed to them), and this actor takes a
push only from the process of the instance's own app, for a live instance; what it keeps of
an instance (its merged state, its calls) goes when the instance ends.

A tool call handed to the surfaces of an instance is offered to each of them that is shown
(`tool_call`), and again to each that becomes ready: then the app's process is asked for
its open calls of that instance (`tool.calls`), so a reloaded page or a restarted web host
offers them again under the same call ids. A surface's answer (`tool.result`,
`tool.error`, `tool.progress`) is taken only for a call offered to that instance and not
ended; the app's process checks it again against its own record, and the tool router
holds the output to the tool's schema.

What the page frames is sent to it unasked: when its surface socket opens, at each notice of
the app manager that the registry changed (`_changes`), and after a while without one if
the registry changed (the safety look, as the page's own socket has), the socket is sent the
surfaces of live instances, the one in front first (`surfaces`), and before them, when the
surface it was last sent opened is not the one in front's, that one opened (`opened`): the
page frames each as it comes, with no round trip of its own, and closes the one it framed
before. One listing at a time per socket, so the front is opened for it once.

Socket frames, page → web host: `close` {`token`}; `bridge` {`token`, `text`}: the frame's
message as it was posted; `dropped` {`counts`}: what the page refused, by reason, for the
statistics. Web host → page: `surfaces` {`items`}; `opened` {`instance_id`, `token`, `src`,
`declared`}; `to_surface` {`token`, `message`}; `refused` {`token`?, `code`, `detail`}.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

import trio
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from actors.app_manager.registry import LIVE_STATES, RegistryReader
from actors.kernel import Actor, CallFailed, Message, handles
from contracts import (
    BridgeMessage,
    CapabilityAsk,
    Code,
    ContractError,
    Emit,
    SessionReplace,
    SurfaceToolAnswer,
    check_bridge_text,
)

from ._changes import PageNotices
from ._surfaces import (
    BRIDGE_PATH,
    Surface,
    find_surface,
    new_token,
    surface_checked,
    surface_file,
    surface_headers,
    surfaces_shown,
    warm_surfaces,
)
from .door import SurfacePush

log = logging.getLogger("lineup.web_host")

PUSH: Final = "web_host.surface.push"
REQUEST: Final = "app.surface.request"
CALL_TIMEOUT_S: Final = 10.0
CAPABILITY_TIMEOUT_S: Final = 100.0  # the user may take the gateway's full minute
MAX_STATE_BYTES: Final = 256 * 1024  # a surface's merged state, as JSON
MAX_OPEN: Final = 8  # surfaces one page has open at once
MAX_IN_FLIGHT: Final = 32  # relays of one page waiting for their app at once
MAX_CALLS_KEPT: Final = 256  # open calls kept for an instance whose surface is shown
# Bridge frames one page may relay: a person clicks a few times a second.
RATE_PER_S: Final = 50.0
BURST: Final = 200.0
# The reasons the page drops a message for (`surfaces.js`): counted by these names only.
# `rate_limited` is a display request over the page's pace, answered but not decided.
PAGE_REASONS: Final = frozenset(
    {"source", "not_text", "too_large", "invalid_json", "unknown_type", "invalid_payload",
     "scope_mismatch", "undeclared_event", "undeclared_capability", "unknown_call",
     "undeclared_mode", "rate_limited"}
)  # fmt: skip

Send = Callable[[dict[str, Any]], Awaitable[None]]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396: a map patch merges key by key, null removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


@dataclass
class _Shown:
    surface: Surface
    send: Send


@dataclass
class _Page:
    """One page's surface socket: how to send to it, the tokens it holds, and the reader of
    the registry its listings use, one at a time (so the one in front is opened once).

    The page frames the surface it was sent opened last (`framed`, its token) and closes the
    one it framed before: whether the one in front must be opened for it is judged by that,
    not by the tokens it still holds, whose close may be on its way."""

    send: Send
    reader: RegistryReader
    tokens: set[str] = field(default_factory=set)
    framed: str | None = None
    # The one in front could not be opened: tried again at the next look, notice or not.
    unopened: bool = False


def _relayed_body(surface: Surface, message: BridgeMessage) -> dict[str, Any]:
    """What the app's process is asked: the instance is the one shown, never the message's."""
    body: dict[str, Any] = {"instance_id": surface.instance_id, "op": message.type}
    if isinstance(message, Emit):
        body.update(name=message.name, payload=message.payload)
    elif isinstance(message, SessionReplace):
        body.update(data=message.data, expected_revision=message.expected_revision)
    elif isinstance(message, CapabilityAsk):
        body.update(capability=message.capability, purpose=message.purpose, input=message.input)
    elif isinstance(message, SurfaceToolAnswer):
        fields = message.model_dump(mode="json", exclude={"v", "id", "instance_id", "type"})
        body.update({key: value for key, value in fields.items() if value is not None})
    return body


def _offer(instance_id: str, call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as its surface is handed it."""
    return {"type": "tool_call", "instance_id": instance_id, **call}


class Surfaces:
    """The surfaces pages show: tokens, their files, the relay, the pushes."""

    def __init__(self, actor: Actor, data_dir: Path, notices: PageNotices) -> None:
        self.actor = actor
        self.data_dir = data_dir
        self.notices = notices  # the app manager's that the registry changed, among them
        self.shown: dict[str, _Shown] = {}  # token -> the surface and its page's socket
        # The live instances as the registry was last read: what a push may name. What is
        # kept of an instance (its state, its calls) ends with it, so a runtime that
        # launches apps for months keeps only its live instances' here.
        self.live: frozenset[str] = frozenset()
        # The registry is read in the event loop, on a kept connection (a millisecond or
        # so): a worker thread's round trip costs more on a busy machine.
        self._reader = RegistryReader(data_dir)
        self.warmed: set[str] = set()  # the cache entries whose surfaces were checked
        self.states: dict[str, Any] = {}  # instance -> its merged state
        # instance -> call id -> the call, as its app handed it to the instance's surfaces
        self.calls: dict[str, dict[str, dict[str, Any]]] = {}
        self.counters: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()  # by code, the web host's own checks
        self.page_dropped: Counter[str] = Counter()  # by reason, as the pages report them
        self.in_flight: Counter[Send] = Counter()  # per page socket, relays not answered yet
        package = resources.files(__package__) / "static"
        self.bridge_js = package.joinpath("bridge.js").read_bytes()
        self.page_js = package.joinpath("surfaces.js").read_bytes()

    async def keep_warm(self) -> None:
        """The enabled apps' surfaces read and checked before a page opens one, at start and
        at each notice that the registry changed (`warm_surfaces`): each cache entry once,
        in a worker thread (a manifest's check takes tens of ms)."""
        try:
            while True:
                look = self.notices.registry.next_notice()
                apps = self._reader.apps(operations=0, ended=False)
                self._set_live(
                    str(i["instance_id"]) for i in apps["instances"] if i["state"] in LIVE_STATES
                )
                entries = {str(r.get("bundle_digest")) for r in apps["records"] if r["enabled"]}
                if entries - self.warmed:
                    await trio.to_thread.run_sync(warm_surfaces, self.data_dir, apps)
                    self.warmed |= entries
                await look.wait()
        finally:
            self._reader.close()

    def _read_live(self) -> None:
        """The live instances read again from the registry."""
        self._set_live(instance for instance, _ in self._reader.live_instances())

    def _set_live(self, live: Iterable[str]) -> None:
        """The live instances as just read; what was kept of those that ended dropped."""
        self.live = frozenset(live)
        for kept in (self.states, self.calls):
            for instance in [i for i in kept if i not in self.live]:
                del kept[instance]

    def statistics(self) -> dict[str, Any]:
        return {
            "open": len(self.shown),
            "calls_kept": sum(len(calls) for calls in self.calls.values()),
            **dict(self.counters),
            "refused": dict(self.refused),
            "page_dropped": dict(self.page_dropped),
        }

    def routes(self) -> list[Any]:
        return [
            Route("/surface/{token}/{path:path}", self._file),
            Route(BRIDGE_PATH, self._bridge_script),
            Route("/surfaces.js", self._page_script),
            WebSocketRoute("/surface-socket", self._socket),
        ]

    # -- files -----------------------------------------------------------------------------

    async def _file(self, request: Request) -> Response:
        token = request.path_params["token"]
        shown = self.shown.get(token)
        found = surface_file(shown.surface, request.path_params["path"]) if shown else None
        headers = dict(
            (k.decode(), v.decode()) for k, v in surface_headers(request.headers["host"], token)
        )
        if found is None:
            self.counters["files_refused"] += 1
            return PlainTextResponse("Not a file of this surface.", 404, headers=headers)
        self.counters["files"] += 1
        return Response(found[0], media_type=found[1], headers=headers)

    async def _bridge_script(self, request: Request) -> Response:
        headers = {"x-content-type-options": "nosniff", "cache-control": "no-store"}
        return Response(
            self.bridge_js, media_type="text/javascript; charset=utf-8", headers=headers
        )

    async def _page_script(self, request: Request) -> Response:
        return Response(self.page_js, media_type="text/javascript; charset=utf-8")

    # -- the page's surface socket ---------------------------------------------------------

    async def _socket(self, websocket: WebSocket) -> None:
        await websocket.accept()
        lock = trio.Lock()

        async def send(frame: dict[str, Any]) -> None:
            with contextlib.suppress(Exception):  # the page may be gone: it reconnects
                async with lock:
                    await websocket.send_text(json.dumps(frame, ensure_ascii=False))

        page = _Page(send, RegistryReader(self.data_dir))
        tokens, last = BURST, trio.current_time()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._follow_registry, page)
                while True:
                    message = await websocket.receive()
                    if message["type"] == "websocket.disconnect":
                        break
                    now = trio.current_time()
                    tokens, last = min(BURST, tokens + (now - last) * RATE_PER_S), now
                    if tokens < 1:
                        self.refused[str(Code.RATE_LIMITED)] += 1
                        continue
                    tokens -= 1
                    await self._frame(message.get("text"), page, nursery)
                nursery.cancel_scope.cancel()
        finally:
            for token in page.tokens:
                self.shown.pop(token, None)
            page.reader.close()

    async def _frame(self, text: Any, page: _Page, nursery: trio.Nursery) -> None:
        send, mine = page.send, page.tokens
        try:
            frame = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            frame = None
        kind = frame.get("t") if isinstance(frame, dict) else None
        if kind == "bridge" and isinstance(frame, dict):
            token = frame.get("token")
            if isinstance(token, str) and token in mine:
                if self.in_flight.get(send, 0) >= MAX_IN_FLIGHT:
                    self.refused[str(Code.RATE_LIMITED)] += 1
                    await send({"t": "refused", "token": token, "code": str(Code.RATE_LIMITED)})
                    return
                nursery.start_soon(self._bridge, token, frame.get("text"), send)
                return
        elif kind == "close" and isinstance(frame, dict) and frame.get("token") in mine:
            mine.discard(str(frame["token"]))
            self.shown.pop(str(frame["token"]), None)
            return
        elif kind == "dropped" and isinstance(frame, dict):
            self._count_dropped(frame.get("counts"))
            return
        self.refused[str(Code.INVALID_FRAME)] += 1
        await send({"t": "refused", "code": str(Code.INVALID_FRAME), "detail": "not a frame"})

    async def _follow_registry(self, page: _Page) -> None:
        """The page's list, unasked: at once, then at each notice that the registry changed,
        and after `safety_s` without one if the registry changed or the one in front could
        not be opened."""
        noticed = True
        while True:
            # The notice to wait for first: one that comes during the listing makes one more.
            look = self.notices.registry.next_notice()
            await self._list(page, always=noticed or page.unopened)
            with trio.move_on_after(self.notices.safety_s):
                await look.wait()
            noticed = look.is_set()

    async def _list(self, page: _Page, *, always: bool) -> None:
        """The surfaces of live instances, the one in front first, after the surface of the
        one in front opened if the page does not frame it; unless `always`, only if
        the registry changed since the last listing. Its page's listings run one at a time
        (`_follow_registry`)."""
        if not page.reader.changed() and not always:
            return
        # Read in the event loop: on the kept connection a read is ≈1 ms, less than a
        # worker thread's round trip on a busy machine (tens of ms).
        apps = page.reader.apps(operations=0, ended=False)
        items = surfaces_shown(apps)
        # A token lives only as long as its instance: closed, or its app disabled or removed,
        # the surface's files and relays end with it.
        live = {item["instance_id"] for item in items}
        for token in [t for t in page.tokens if self.shown[t].surface.instance_id not in live]:
            page.tokens.discard(token)
            del self.shown[token]
        for instance in [i for i in self.calls if i not in live]:
            del self.calls[instance]  # its calls ended with it
        front = items[0]["instance_id"] if items else None
        framed = self.shown.get(page.framed) if page.framed is not None else None
        shows = framed.surface.instance_id if framed is not None else None
        page.unopened = False
        if front is not None and front != shows and len(page.tokens) < MAX_OPEN:
            page.unopened = not await self._open(front, page, apps)
        await page.send({"t": "surfaces", "items": items})

    def _count_dropped(self, counts: Any) -> None:
        if not isinstance(counts, dict):
            return
        for reason, n in counts.items():
            if reason in PAGE_REASONS and isinstance(n, int) and 0 < n <= 1_000_000:
                self.page_dropped[reason] += n

    async def _open(self, instance_id: str, page: _Page, apps: dict[str, Any]) -> bool:
        """A token for the surface of a live instance (in `apps`, the registry as just read),
        sent to the page as `opened`; or why not, as `refused`. Whether it was opened."""
        send = page.send
        find = functools.partial(find_surface, self.data_dir, instance_id, apps)
        try:
            # In the event loop once its manifest was checked (`keep_warm`): a worker
            # thread's round trip costs tens of ms on a busy machine; a first check, tens of
            # ms itself, in one.
            if surface_checked(self.data_dir, instance_id, apps):
                surface = find()
            else:
                surface = await trio.to_thread.run_sync(find)
        except ContractError as refusal:
            refused = {"t": "refused", "of": "open", "code": str(refusal.code)}
            await send({**refused, "detail": refusal.detail})
            return False
        except (OSError, ValueError, KeyError, TypeError):  # a cache entry it cannot read
            log.exception("the surface of %s cannot be read", instance_id)
            detail = "the app's bundle cannot be read"
            code = str(Code.BUNDLE_UNREADABLE)
            await send({"t": "refused", "of": "open", "code": code, "detail": detail})
            return False
        token = new_token()
        self.shown[token] = _Shown(surface, send)
        page.tokens.add(token)
        page.framed = token
        self.counters["opened"] += 1
        src = f"/surface/{token}/{surface.path}#{surface.instance_id}"
        await send(
            {
                "t": "opened",
                "instance_id": instance_id,
                "app_scope": surface.app_scope,
                "title": surface.title,
                "token": token,
                "src": src,
                "declared": surface.declared(),
            }
        )
        return True

    # -- one message from a frame ----------------------------------------------------------

    async def _bridge(self, token: str, text: Any, send: Send) -> None:
        shown = self.shown.get(token)
        if shown is None:
            return
        surface = shown.surface
        try:
            if not isinstance(text, str):
                raise ContractError(Code.INVALID_FRAME, "the message is not text")  # noqa: TRY301
            message = check_bridge_text(
                text,
                instance_id=surface.instance_id,
                events=surface.events,
                capabilities=surface.capabilities,
                calls=frozenset(self._offered(surface)),
            )
        except ContractError as refusal:
            self.refused[str(refusal.code)] += 1
            log.warning("refused a message of the surface of %s: %s", surface.instance_id, refusal)
            await send(
                {
                    "t": "refused",
                    "token": token,
                    "code": str(refusal.code),
                    "detail": refusal.detail,
                }
            )
            return
        if message.type == "ready":
            state = self.states.get(surface.instance_id, {})
            await self._to_surface(
                token, {"type": "init", "instance_id": surface.instance_id, "state": state}
            )
            if surface.tools:
                await self._offer_open_calls(token, surface)
            return
        self.counters["relayed"] += 1
        answer: dict[str, Any] = {"type": "reply", "id": message.id}
        timeout = CAPABILITY_TIMEOUT_S if message.type == "capability" else CALL_TIMEOUT_S
        self.in_flight[send] += 1
        try:
            result = await self.actor.call(
                f"app.{surface.app_scope}",
                REQUEST,
                _relayed_body(surface, message),
                timeout=timeout,
            )
            answer.update(ok=True, result=result)
        except CallFailed as failed:
            answer.update(ok=False, code=failed.code, detail=failed.detail[:300])
        finally:
            self.in_flight[send] -= 1
            if self.in_flight[send] <= 0:
                del self.in_flight[send]
        if isinstance(message, SurfaceToolAnswer) and message.type != "tool.progress":
            # Ended, or refused by the app as not open: no surface is offered it again.
            self.calls.get(surface.instance_id, {}).pop(message.call_id, None)
        await self._to_surface(token, answer)

    # -- tool calls handed to the surfaces -------------------------------------------------

    def _offered(self, surface: Surface) -> dict[str, dict[str, Any]]:
        """The open calls this surface may answer: its instance's, of its app's
        `surface_bridge` tools."""
        calls = self.calls.get(surface.instance_id, {})
        return {cid: call for cid, call in calls.items() if call["method"] in surface.tools}

    async def _offer_open_calls(self, token: str, surface: Surface) -> None:
        """A surface is ready: its app's open calls of the instance, from the app's own
        record (what this process held may be stale, or lost with its last run)."""
        try:
            reply = await self.actor.call(
                f"app.{surface.app_scope}",
                REQUEST,
                {"instance_id": surface.instance_id, "op": "tool.calls"},
                timeout=CALL_TIMEOUT_S,
            )
        except CallFailed as failed:
            log.warning("the open calls of %s: %s", surface.instance_id, failed)
            return
        calls = reply.get("calls") if isinstance(reply, dict) else None
        self.calls[surface.instance_id] = {
            str(call["call_id"]): call for call in calls or () if isinstance(call, dict)
        }
        for call in self._offered(surface).values():
            await self._to_surface(token, _offer(surface.instance_id, call))

    async def _to_surface(self, token: str, message: dict[str, Any]) -> None:
        shown = self.shown.get(token)
        if shown is not None:
            await shown.send({"t": "to_surface", "token": token, "message": {"v": 1, **message}})

    # -- pushes from the app's process -----------------------------------------------------

    async def push(self, msg: Message) -> None:
        body = msg.body if isinstance(msg.body, dict) else {}
        instance = body.get("instance_id")
        scope = msg.sender.removeprefix("app.")
        if not isinstance(instance, str) or not instance.startswith(f"{scope}:"):
            # Only the process of the instance's own app speaks to its surfaces.
            self.refused[str(Code.OWNERSHIP_MISMATCH)] += 1
            raise ContractError(Code.OWNERSHIP_MISMATCH, "instance_id: not the sender's")
        if instance not in self.live:
            self._read_live()  # launched since the last notice, perhaps
        if instance not in self.live:
            # An instance closed or never launched: nothing of it is kept (an app naming
            # made-up instances would otherwise fill the web host's memory).
            self.refused[str(Code.INSTANCE_NOT_FOUND)] += 1
            raise ContractError(Code.INSTANCE_NOT_FOUND, "instance_id: no live instance")
        kind = body.get("kind")
        if kind == "state":
            merged = merge_patch(self.states.get(instance, {}), body.get("patch"))
            if not isinstance(merged, dict) or len(json.dumps(merged)) > MAX_STATE_BYTES:
                self.refused[str(Code.TOO_LARGE)] += 1
                raise ContractError(
                    Code.TOO_LARGE, f"a surface's state is at most {MAX_STATE_BYTES}"
                )
            self.states[instance] = merged
            message: dict[str, Any] = {"type": "state", "state": merged}
        elif kind == "session":
            message = {
                "type": "session",
                "data": body.get("data"),
                "revision": body.get("revision"),
            }
        elif kind == "tool_call":
            call = {key: body.get(key) for key in ("call_id", "method", "arguments")}
            if not (
                isinstance(call["call_id"], str)
                and isinstance(call["method"], str)
                and isinstance(call["arguments"], dict)
            ):
                raise ContractError(
                    Code.INVALID_PAYLOAD, "a tool call's call_id, method, arguments"
                )
            self.counters["tool_calls_offered"] += 1
            # Kept only while a surface of the instance is shown, and the newest ones alone:
            # a surface that opens later is given the app's own record of its open calls
            # (`_offer_open_calls`), and a call that ends unanswered (its deadline, its
            # cancel) is not told here, so one kept with no surface shown would stay as long
            # as its instance lives.
            if any(shown.surface.instance_id == instance for shown in self.shown.values()):
                kept = self.calls.setdefault(instance, {})
                kept[str(call["call_id"])] = call
                for old in list(kept)[: max(0, len(kept) - MAX_CALLS_KEPT)]:
                    del kept[old]
            for token, shown in list(self.shown.items()):
                if shown.surface.instance_id == instance and call["method"] in shown.surface.tools:
                    await self._to_surface(token, _offer(instance, call))
            return
        else:
            raise ContractError(Code.UNKNOWN_TYPE, f"kind {str(kind)[:40]!r}")
        self.counters["pushed"] += 1
        for token, shown in list(self.shown.items()):
            if shown.surface.instance_id == instance:
                await self._to_surface(token, message)


class SurfacePushes(Actor):
    """The web host actor's handler of its apps' pushes (mixed into `WebHostActor`)."""

    surfaces: Surfaces

    @handles(PUSH)
    async def _surface_push(self, msg: Message[SurfacePush]) -> None:
        await self.surfaces.push(msg)
