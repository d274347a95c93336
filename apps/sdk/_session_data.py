"""`sdk.session_data`: one JSON object per app instance, kept by the runtime.

The app decides what its data means; the runtime keeps it per `app_scope + instance_id`
(the scope is the app's process, which the runtime knows; the instance is one of the app's
live instances), with a revision, across restarts of the app and of the runtime, until the
user removes the app. Every call names its instance (`instance_id=`, e.g. a tool call's
`call.instance_id`) or, without one, means the app's only running instance. An instance is
the runtime's once its launch is recorded: from its `start` hook on, or in a tool call on it.

- `get()` → {`data`, `revision`}; before the first write {`data`: None, `revision`: 0}.
- `replace(data, expected_revision)` → {`revision`}: `data` is a JSON object (replace it
  with {} to clear it), `expected_revision` the revision it was made from. A write made
  from an older revision raises `CallFailed("revision_conflict")`: the newer data stays,
  nothing is merged; get it again and decide.
- `subscribe(listener)` → an unsubscribe: the listener's first call is the whole snapshot
  at the moment the runtime registered it, then one call per later revision, strictly
  increasing. A write between a `get` and a `subscribe` is in that first snapshot or
  reaches the listener next: none is lost.

Refusals are `CallFailed` with the runtime's code: `ownership_mismatch` (another app's
instance), `instance_not_found` (one that is closed or unknown), `invalid_payload`,
`too_large`, `too_deep` (the quotas).

How: `get` and `replace` are calls to the store; after each committed replace the store
tells the app's process (`app.session_data.changed` {`instance_id`, `data`, `revision`}),
whoever listens. A subscription's first frame is a `get`, answered in the store's serial
order; what is announced before that answer reaches the app waits for it. A listener
ignores a revision it has seen; one that skips a revision (a frame lost: its message
dead-lettered) takes a fresh snapshot instead. After the app's process restarts, the app
subscribes again, as at its first start.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from actors.kernel import Actor, Message, handles

from .door import SessionDataChanged

if TYPE_CHECKING:
    from ._app_core import AppCore, SdkFace

log = logging.getLogger("lineup.app")

STORE: Final = "store"
CHANGED: Final = "app.session_data.changed"

Snapshot = dict[str, Any]
SnapshotListener = Callable[[Snapshot], Awaitable[None] | None]


@dataclass(eq=False)
class _Subscription:
    listener: SnapshotListener
    instance_id: str | None  # None until the first snapshot names it
    last: int = 0  # the revision it saw last
    # Until its first snapshot and what was announced before it are delivered, what is
    # announced waits here: the listener sees revisions in order.
    ready: bool = False
    early: list[Snapshot] = field(default_factory=list)


def _snapshot(reply: dict[str, Any]) -> Snapshot:
    return {"data": reply.get("data"), "revision": int(reply.get("revision") or 0)}


class SessionDataAPI:
    def __init__(self, app: AppCore) -> None:
        self._app = app
        self._subscriptions: list[_Subscription] = []

    async def get(self, *, instance_id: str | None = None) -> Snapshot:
        return _snapshot(await self._get(instance_id))

    async def replace(
        self, data: dict[str, Any], expected_revision: int, *, instance_id: str | None = None
    ) -> dict[str, int]:
        body: dict[str, Any] = {"data": data, "expected_revision": expected_revision}
        if instance_id is not None:
            body["instance_id"] = instance_id
        reply = await self._ask("store.session_data.replace", body)
        return {"revision": int(reply["revision"])}

    async def subscribe(
        self, listener: SnapshotListener, *, instance_id: str | None = None
    ) -> Callable[[], None]:
        """Call `listener` with the snapshot now, then with each later revision."""
        subscription = _Subscription(listener, instance_id)
        self._subscriptions.append(subscription)
        try:
            first = await self._get(instance_id)
        except BaseException:
            self._subscriptions.remove(subscription)
            raise
        subscription.instance_id = str(first["instance_id"])
        await self._deliver(subscription, _snapshot(first))
        while subscription.early:
            early, subscription.early = subscription.early, []
            for frame in sorted(early, key=lambda f: int(f["revision"])):
                if frame.get("instance_id") == subscription.instance_id:
                    await self._offer(subscription, frame)
        subscription.ready = True
        return lambda: self._unsubscribe(subscription)

    def _unsubscribe(self, subscription: _Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)

    # -- the runtime's side ----------------------------------------------------------------

    async def _changed(self, frame: dict[str, Any]) -> None:
        """A committed replace, announced by the store."""
        for subscription in list(self._subscriptions):
            if not subscription.ready:
                subscription.early.append(frame)
            elif frame.get("instance_id") == subscription.instance_id:
                await self._offer(subscription, frame)

    async def _offer(self, subscription: _Subscription, frame: dict[str, Any]) -> None:
        snapshot = _snapshot(frame)
        last = subscription.last
        if snapshot["revision"] <= last:
            return  # seen already
        if snapshot["revision"] > last + 1:  # one was missed: take the whole state again
            fresh = _snapshot(await self._get(subscription.instance_id))
            snapshot = max(snapshot, fresh, key=lambda s: int(s["revision"]))
        await self._deliver(subscription, snapshot)

    async def _deliver(self, subscription: _Subscription, snapshot: Snapshot) -> None:
        if subscription not in self._subscriptions:
            return  # unsubscribed meanwhile
        subscription.last = snapshot["revision"]
        try:
            value = subscription.listener(dict(snapshot))
            if inspect.isawaitable(value):
                await value
        except Exception:  # the app's listener failed: the app's log says so, the rest go on
            log.exception("a session data listener failed at revision %s", snapshot["revision"])

    async def _get(self, instance_id: str | None) -> dict[str, Any]:
        body = {} if instance_id is None else {"instance_id": instance_id}
        return await self._ask("store.session_data.get", body)

    async def _ask(self, type: str, body: dict[str, Any]) -> dict[str, Any]:
        # Asked again with the same id until the store answers (it may be restarting); in
        # a handler the id derives from the message handled, so a replay writes nothing
        # twice: the store answers a repeated id with its first reply.
        reply = await self._app.call_until_answered(STORE, type, body, id=self._app._ids.next())
        return dict(reply)


class SessionDataInbox(Actor):
    """The app process's handler of the store's announcements (mixed into `RuntimeApp`)."""

    sdk: SdkFace
    _from: Callable[..., None]

    @handles(CHANGED)
    async def _session_data_changed(self, msg: Message[SessionDataChanged]) -> None:
        self._from(msg, STORE)  # the store announces what it committed; nobody else
        await self.sdk.session_data._changed(dict(msg.body))
        await self.sdk.surface._session_changed(str(msg.body.get("instance_id")))
