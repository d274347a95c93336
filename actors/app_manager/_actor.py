"""The app manager actor: registry operations, instances, the focus stack.

- `app_manager.request` (cast or call), from the operator (`lineup app ...`), the
  app-registry app or the host: `operation_id`?, `kind`, `app_scope`?, `bundle`?,
  `confirmed`?, `conversation_id`?, `instance_id`? → the operation's row;
- `app_manager.host_intent`, from the host: foreground, background, open/focus/close app;
- `kernel.actor_failed`, from the supervisor: an app process past its restart intensity,
  whose instances fail.

Kinds: the registry's (install, enable, disable, update, rollback, remove, set_default)
and navigation (launch, focus, close, list). Each request is an `AppOperation` row,
written before the work starts and again when it ends, so the CLI and the app-registry app
can watch it; a `call` gets the final row as its reply. The request message stays unacked
until the handler ends: after a crash it is redelivered and the operation resumes from
its row and completes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import trio
from pydantic import JsonValue

from actors.kernel import (
    Actor,
    CallFailed,
    DerivedIds,
    Message,
    crash_point,
    handles,
    log_tail,
    new_id,
)
from contracts import Code, ContractError

from ._cache import BundleCache, bundle_cache_dir
from ._db import RegistryFile
from ._focus import Focus, Instance, startup_target
from ._migration import move_from_runtime_db
from ._registry import AppOperation, AppRecord, check_request, core_records, forget_finished
from ._requests import HOST_NAVIGATION, NAVIGATION, check_requester, request_fields
from ._start_failure import start_failure
from ._steps import Outcome, Steps
from .door import DOOR, ActorFailed, HostIntent

log = logging.getLogger("lineup.app_manager")

# What the registry keeps of its history, for `lineup app` and a request sent again: the
# newest finished operations (a launch is one) and the newest instances that ended. The
# oldest finished operations go once `OPERATIONS_SLACK` more have finished.
KEEP_OPERATIONS: Final = 100
OPERATIONS_SLACK: Final = 25
KEEP_ENDED_INSTANCES: Final = 100
# The word to the web host, where the runtime runs one (`registry_watcher`), that the
# registry's rows changed: it carries nothing, the web host reads the rows itself.
REGISTRY_CHANGED: Final = "web_host.registry.changed"
BUNDLED_APP: Final = "apps.sdk._bundled:BundledApp"  # imports the bundle's app class


class AppManagerActor(Actor):
    door = DOOR

    async def on_start(self) -> None:
        self.data_dir = Path(str(self.config.get("data_dir", ".")))
        self.steps = Steps(self.data_dir, BundleCache(bundle_cache_dir(self.data_dir)))
        self.steps.cache.sweep()  # what an admit or remove cut short by a crash left
        # The core apps' declared manifests, by scope (the supervisor's, from their code).
        self.core: dict[str, dict[str, Any]] = {
            str(m["app_scope"]): m for m in self.config.get("core_apps", [])
        }
        self.records: dict[str, AppRecord] = {}
        self.operations: dict[str, AppOperation] = {}
        self.focus = Focus(frozenset(self.core))
        self.default_app: str | None = None
        self.host_intents: list[dict[str, Any]] = []
        self.registry_watcher = self.config.get("registry_watcher")
        # Its own file (`_db`), an older data dir's registry moved into it first.
        self.file = RegistryFile.open(self.data_dir)
        move_from_runtime_db(self.file.db, self.data_dir)
        # The registry is loaded in a task of its own, and handlers wait for it.
        self.loaded = trio.Event()
        self.nursery.start_soon(self._load)

    def statistics_extra(self) -> dict[str, Any]:
        return {
            "apps": sorted(self.records),
            "foreground": self.focus.foreground,
            "focus_stack": list(self.focus.stack),
            "operations_running": sum(not op.done for op in self.operations.values()),
            "host_intents": self.host_intents[-10:],
        }

    # -- its file ----------------------------------------------------------------------------

    async def _load(self) -> None:
        state = self.file.load()
        self.records = {r["app_scope"]: AppRecord.from_row(r) for r in state["records"]}
        loaded = [AppOperation.from_row(o) for o in state["operations"]]
        finished = {o.operation_id for o in [o for o in loaded if o.done][-KEEP_OPERATIONS:]}
        self.operations = {
            o.operation_id: o for o in loaded if not o.done or o.operation_id in finished
        }
        self.focus.instances = {i["instance_id"]: Instance.from_row(i) for i in state["instances"]}
        settings = state["settings"]
        # A new epoch, on disk before any view leaves: every view this run sends is newer
        # than one an earlier run sent, committed or not (`view_version`).
        epoch = int((settings.get("view_version") or [0, 0])[0]) + 1
        self.file.write({"settings": {"view_version": [epoch, 0]}})
        self.view_version = [epoch, 0]
        self.focus.stack = [i for i in settings.get("focus_stack", []) if i in self.focus.instances]
        self.default_app = settings.get("default_app")
        ids = DerivedIds(new_id())
        fresh = core_records(self.records, self.core)
        for record in fresh:
            self.records[record.app_scope] = record
        # The start-up target, once per run of the runtime (not when only the app manager
        # restarted, in the middle of an update say): a restorable foreground instance, else
        # the default app, else chat.
        top = self.focus.foreground
        if settings.get("boot") != self.boot_id or top is None:
            target = startup_target(None, self.focus, self.default_app, self.records)
            if top is None or self.focus.instances[top].app_scope != target:
                self.focus.launch(target, None)
        await self._persist(ids, records=fresh, keep_operations=KEEP_OPERATIONS)
        self.steps.drop_unused(self.records)
        # Dynamic children end with the runtime: bring back those with live instances.
        for scope in sorted({i.app_scope for i in self.focus.instances.values() if i.live}):
            try:
                await self._ensure_process(scope)
            except ContractError as refusal:
                log.warning("%s", refusal)
                for instance in self.focus.live_of(scope):
                    self.focus.close(instance.instance_id, failed=refusal.detail)
                await self._persist(ids)
        await self._announce_all(ids)
        self.loaded.set()

    async def _announce_all(self, ids: DerivedIds) -> None:
        """Every live instance's mode, to its app. A crash between a move's write and its
        announcement would otherwise leave an app believing an older mode; hooks are
        idempotent in the SDK, so hearing the current one again changes nothing."""
        for instance in self.focus.instances.values():
            if instance.live:
                await self._announce(instance, instance.mode, ids)

    async def _announce(self, instance: Instance, hook: str, ids: DerivedIds) -> None:
        await self.cast(
            f"app.{instance.app_scope}",
            "app.lifecycle",
            {
                "instance_id": instance.instance_id,
                "hook": hook,
                "conversation_id": instance.conversation_id,
                "mode": instance.mode,
            },
            id=ids.next(),
        )

    async def _persist(
        self,
        ids: DerivedIds,
        *,
        records: Sequence[AppRecord] = (),
        operations: Sequence[AppOperation] = (),
        remove_records: Sequence[str] = (),
        keep_operations: int | None = None,
    ) -> None:
        """One transaction: these rows, the instances that changed, the focus stack (and
        each record whose count of live instances moved)."""
        forgotten = self.focus.forget_ended(KEEP_ENDED_INSTANCES)
        if keep_operations is None and forget_finished(
            self.operations, KEEP_OPERATIONS, OPERATIONS_SLACK
        ):
            keep_operations = KEEP_OPERATIONS
        changed, events = self.focus.take_changes()
        routing = self._routing()
        self.view_version = [self.view_version[0], self.view_version[1] + 1]
        written = {r.app_scope: r for r in records}
        for scope, record in self.records.items():
            live = len(self.focus.live_of(scope))
            current = written.get(scope, record)
            if current.active_instance_count != live:
                written[scope] = dataclasses.replace(current, active_instance_count=live)
                self.records[scope] = written[scope]
        body: dict[str, Any] = {
            "records": [r.to_row() for r in written.values()],
            "operations": [o.to_row() for o in operations],
            "remove_records": list(remove_records),
            "keep_operations": keep_operations,
            "instances": [i.to_row() for i in changed],
            "remove_instances": forgotten,
            "settings": {
                "focus_stack": self.focus.stack,
                "default_app": self.default_app,
                "routing": routing,
                "boot": self.boot_id,
                "view_version": self.view_version,
            },
        }
        # Fresh ids, not derived ones: both are whole-state replacements, safe to apply
        # twice, and a replayed handler that took another path than its first run must
        # have its views sent (a derived id would be taken for the first run's message).
        # The tool router's carries its version: one that holds a newer view (read from
        # this file at its start) ignores an older one its mailbox gives it again, which
        # would publish a state that has passed. (The router's decisions are its mailbox's
        # order: what it is given again, it decides again in the same order.)
        # The router's mailbox has the new view before the operation is seen to end, so an
        # agent message sent after that is filtered by it (mailbox order is arrival order).
        await self.cast("router", "router.apps", {"apps": routing}, id=new_id())
        await self.cast("tool_router", "tool_router.apps", self._tool_view(), id=new_id())
        if remove_records:
            # What the store keeps of a removed app (its session data, artifacts and
            # diagnostics) goes with its record. The word goes before the record's removal
            # is committed: a removal cut short by a crash resumes from its operation's row
            # and is committed then, so a forgotten app is always a removed one.
            await self.cast(
                "store", "store.apps.removed", {"app_scopes": list(remove_records)}, id=new_id()
            )
        self.file.write(body)  # a few steps an operation: the loop waits for the sync
        if self.registry_watcher:
            # A cast, once the rows are committed: the pages frame an app in front as soon
            # as the launch is written, and nothing here waits on the web host. One that is
            # down finds the notices in its inbox; a notice lost to a crash right here is
            # made up by its slower look of its own.
            await self.cast(str(self.registry_watcher), REGISTRY_CHANGED, {}, id=new_id())
        for instance_id, hook in events:  # the apps hear of it once it is on disk
            await self._announce(self.focus.instances[instance_id], hook, ids)

    def _tool_view(self) -> dict[str, Any]:
        """The tool router's view: every record, the live instances and the focus stack
        (the shape of `registry.read_apps`, which it reads at start)."""
        return {
            "records": [r.to_row() for r in self.records.values()],
            "instances": [i.to_row() for i in self.focus.instances.values() if i.live],
            "settings": {"focus_stack": self.focus.stack},
            "version": self.view_version,
        }

    def _routing(self) -> dict[str, Any]:
        """The router's view of the apps (filter chain steps 4, 6, 7), kept with the
        registry so that a router that restarts finds it in the app manager's file."""
        apps = {}
        for scope, record in self.records.items():
            # A core app's manifest is the one its code declares, not kept in its record.
            manifest = self.core.get(scope) if record.kind == "core" else record.manifest
            subscriptions = [s["type"] for s in (manifest or {}).get("agent_subscriptions", [])]
            apps[scope] = {
                "enabled": record.enabled and record.install_state == "installed",
                "subscriptions": subscriptions,
                "instances": [i.instance_id for i in self.focus.live_of(scope)],
            }
        return apps

    # -- requests ------------------------------------------------------------------------

    @handles("app_manager.request")
    async def request(self, msg: Message[dict[str, JsonValue]]) -> Any:
        await self.loaded.wait()
        body = dict(msg.body or {})
        ids = DerivedIds(msg.id)
        op_id = str(body.get("operation_id") or msg.id)
        op = self.operations.get(op_id)
        if op is not None and op.done:
            return self._answer(op, msg)
        if op is None:
            kind, scope = str(body.get("kind"))[:64], str(body.get("app_scope") or "")[:128]
            op = AppOperation(op_id, kind, scope)
            op.request = request_fields(body)
        # A request its sender may not make is refused before any row exists: an app
        # asking again and again must cost the registry nothing.
        check_requester(msg.sender, op, self.focus, self.core)
        try:
            op = await self._run(op, ids)
        except ContractError as refusal:
            op = op.ended("failed", refusal.code, refusal.detail)
            self.operations[op.operation_id] = op
            await self._persist(ids, operations=[op])
        log.info(
            "operation %s %s %s: %s %s",
            op.operation_id,
            op.kind,
            op.app_scope,
            op.state,
            op.code or "",
        )
        return self._answer(op, msg)

    def _answer(self, op: AppOperation, msg: Message) -> Any:
        row = op.to_row()
        if msg.wants_reply and op.state == "failed":
            raise ContractError(Code(str(op.code)), str(op.detail))
        return row

    async def _run(self, op: AppOperation, ids: DerivedIds) -> AppOperation:
        if op.kind in NAVIGATION:
            return await self._navigate(op, ids)
        if op.kind not in ("install",):
            check_request(op.kind, op.app_scope, op.request, self.records)
        # A row already running is this same request, redelivered after a crash.
        op = op.at("resumed" if op.state == "running" else "start", 10)
        before = self.records.get(op.app_scope)
        marked: list[AppRecord] = []
        if op.kind == "update" and before is not None:
            # On a replay the record on disk is already marked: what it goes back to is the
            # same record, installed.
            before = dataclasses.replace(before, install_state="installed")
            marked = [dataclasses.replace(before, install_state="updating")]
            self.records[op.app_scope] = marked[0]
        self.operations[op.operation_id] = op
        await self._persist(ids, operations=[op], records=marked)
        crash_point("app_manager.after_start")
        try:
            if op.kind in ("disable", "remove"):
                await self._close_app(op.app_scope)
            outcome: Outcome = self._step(op)
            crash_point("app_manager.after_step")
        except ContractError as refusal:
            if before is None or not marked:
                raise
            self.records[op.app_scope] = before  # the registry goes back to what it was
            op = op.ended("rolled_back", refusal.code, refusal.detail)
            self.operations[op.operation_id] = op
            await self._persist(ids, operations=[op], records=[before])
            return op
        for record in outcome.records:
            self.records[record.app_scope] = record
            op = dataclasses.replace(op, app_scope=record.app_scope)
        for scope in outcome.remove_records:
            self.records.pop(scope, None)
            if self.default_app == scope:
                self.default_app = None
        op = op.ended("succeeded")
        op.request = {**op.request, "result": outcome.result} if outcome.result else op.request
        self.operations[op.operation_id] = op
        await self._persist(
            ids, operations=[op], records=outcome.records, remove_records=outcome.remove_records
        )
        self.steps.drop_unused(self.records)
        if op.kind in ("update", "rollback") and self.focus.live_of(op.app_scope):
            # Its running instances carry on in the version now installed.
            await self._stop_process(op.app_scope)
            await self._ensure_process(op.app_scope)
        return op

    def _step(self, op: AppOperation) -> Outcome:
        """The operation's work; any failure of it is the operation's, with a code."""
        try:
            outcome: Outcome = getattr(self.steps, op.kind)(op, self.records)
        except ContractError:
            raise
        except Exception as exc:  # it ends the operation: never half-done
            log.exception("operation %s %s failed", op.operation_id, op.kind)
            raise ContractError(Code.FAILED, f"{type(exc).__name__}: {exc}") from None
        return outcome

    # -- navigation and instances ---------------------------------------------------------

    async def _navigate(self, op: AppOperation, ids: DerivedIds) -> AppOperation:
        scope = op.app_scope
        request = op.request
        if op.kind == "list":  # nothing changes: answered, not recorded
            apps = [r.public() for r in self.records.values()]
            listed = {"apps": apps, "default_app": self.default_app}
            return dataclasses.replace(op.ended("succeeded"), request={"result": listed})
        if op.kind == "open_default":
            scope = startup_target(
                None, Focus(frozenset(self.core)), self.default_app, self.records
            )
            op = dataclasses.replace(op, kind="launch", app_scope=scope)
        if op.kind in ("launch", "set_default"):
            record = self.records.get(scope)
            if record is None:
                raise ContractError(Code.APP_NOT_INSTALLED, f"no app {scope!r} is installed")
            if not record.enabled:
                raise ContractError(Code.APP_DISABLED, f"app {scope!r} is disabled")
            entrypoint = request.get("entrypoint")
            entrypoints = [e.get("id") for e in (record.manifest or {}).get("entrypoints", [])]
            if entrypoint is not None and record.manifest and entrypoint not in entrypoints:
                raise ContractError(
                    Code.INVALID_ENTRYPOINT, f"{scope!r} has no entrypoint {entrypoint!r}"
                )
        if op.kind == "set_default":
            self.default_app = scope
            result: dict[str, Any] = {"default_app": scope}
        elif op.kind == "launch":
            instance = self.focus.launch(
                scope,
                request.get("conversation_id"),
                request.get("local"),
                foreground=request.get("mode") != "background",
            )
            try:
                await self._ensure_process(scope)
            except ContractError:
                # It never came up: it fails, and what was in front comes back.
                self.focus.close(instance.instance_id, failed="did not start")
                await self._persist(ids)
                raise
            result = {"instance_id": instance.instance_id}
        elif op.kind == "focus":
            result = {"instance_id": self.focus.focus(str(request.get("instance_id"))).instance_id}
        else:
            instance_id = str(request.get("instance_id"))
            closed = self.focus.close(instance_id)
            if not self.focus.live_of(closed.app_scope):
                await self._stop_process(closed.app_scope)
            result = {"instance_id": instance_id}
        op = dataclasses.replace(op.ended("succeeded"), request={**request, "result": result})
        self.operations[op.operation_id] = op
        await self._persist(ids, operations=[op])
        return op

    async def _close_app(self, scope: str) -> None:
        for instance in self.focus.live_of(scope):
            self.focus.close(instance.instance_id)
        await self._stop_process(scope)

    async def _ensure_process(self, scope: str) -> None:
        """Installed apps run as isolated dynamic children while they have an instance;
        raises ContractError if the process does not come up."""
        if scope in self.core:  # a core app is a static child of the runtime
            return
        record = self.records[scope]
        if self.steps.cache.entry(record.bundle_digest or "") is None:
            raise ContractError(Code.BUNDLE_MISSING, f"the bundle of {scope!r} is not in the cache")
        self.steps.reverify(record.bundle_digest)  # trust may have changed since install
        spec = {
            "name": f"app.{scope}",
            "target": BUNDLED_APP,
            # Its verified code, read-only in its view: the app cannot change what runs.
            "isolation": {
                "private_dir": f"apps/{scope}",
                "code_dir": f"bundles/{record.bundle_digest}/app",
            },
            "config": {"app_scope": scope},
        }
        try:
            started = await self.supervise("start", spec=spec)
        except CallFailed as exc:
            raise ContractError(
                Code.APP_START_FAILED, f"{scope}: {exc.code}: {exc.detail}"
            ) from None
        if started["state"] in ("failed", "stopped"):
            # It ended before it was ready, and the supervisor answered at once: why is in
            # the last lines of its log.
            reason = log_tail(self.data_dir / "logs" / f"app.{scope}.log")
            log.warning("app.%s did not start: %s", scope, reason or "its log is empty")
            raise ContractError(Code.APP_START_FAILED, start_failure(scope, reason))

    async def _stop_process(self, scope: str) -> None:
        if scope in self.core:
            return
        try:
            await self.supervise("stop", name=f"app.{scope}")
        except CallFailed as exc:
            log.warning("could not stop app.%s: %s", scope, exc)

    # -- from the host and the supervisor --------------------------------------------------

    @handles("app_manager.host_intent")
    async def host_intent(self, msg: Message[HostIntent]) -> None:
        """A host lifecycle intent, checked and audited by the host actor. The window's
        foreground / background are kept for the record; opening, focusing and closing
        an app are navigation, run as operations like the CLI's."""
        await self.loaded.wait()
        body = msg.body
        self.host_intents.append(dict(body))
        del self.host_intents[:-10]
        kind = HOST_NAVIGATION.get(body["intent"])
        if kind is None or msg.sender != "host":
            return
        scope = body["app_scope"] or ""
        op = self.operations.get(msg.id) or AppOperation(msg.id, kind, scope)
        if op.done:
            return
        if kind in ("focus", "close"):  # the host names the app; its foreground instance
            live = [i for i in self.focus.stack if self.focus.instances[i].app_scope == scope]
            op.request = {"instance_id": live[-1] if live else f"{scope}:main"}
        ids = DerivedIds(msg.id)
        try:
            op = await self._run(op, ids)
        except ContractError as refusal:
            op = op.ended("failed", refusal.code, refusal.detail)
            self.operations[op.operation_id] = op
            await self._persist(ids, operations=[op])

    @handles("kernel.actor_failed")
    async def actor_failed(self, msg: Message[ActorFailed]) -> None:
        """An app process is past its restart intensity: its instances fail, and the
        instance below the failed one in the focus stack comes back."""
        await self.loaded.wait()
        name = msg.body["name"]
        scope = name.removeprefix("app.")
        if not name.startswith("app.") or scope not in self.records:
            return
        ids = DerivedIds(msg.id)
        for instance in self.focus.live_of(scope):
            self.focus.close(instance.instance_id, failed=msg.body["reason"])
        await self._persist(ids)
        await self._stop_process(scope)  # the failed child goes: the runtime is not degraded
