"""App instances and the focus stack, as plain state and rules.

    not_running → launching → active → backgrounded → suspended
                                         ↘ restoring → active
    active / suspended → closing → closed
                             ↘ failed

The focus stack holds the instances the user can return to, bottom to top; the top one is
in the foreground. Launching a contextual app puts the current top in the background (its
place kept); when the top closes, finishes or fails, the one below comes back in the mode
it had. Nothing here does I/O: the actor persists what these functions return.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Final

from contracts import Code, ContractError

from ._registry import RECOVERY_APP, AppRecord, now_ms
from ._rows import LIVE_STATES

TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    "not_running": frozenset({"launching"}),
    "launching": frozenset({"active", "failed", "closing"}),
    "active": frozenset({"backgrounded", "closing", "failed"}),
    "backgrounded": frozenset({"suspended", "restoring", "closing", "failed"}),
    "suspended": frozenset({"restoring", "closing", "failed"}),
    "restoring": frozenset({"active", "failed", "closing"}),
    "closing": frozenset({"closed", "failed"}),
    "closed": frozenset(),
    "failed": frozenset(),
}


@dataclass
class Instance:
    instance_id: str
    app_scope: str
    conversation_id: str | None
    state: str = "not_running"
    mode: str = "background"  # foreground | background: where it was when last seen
    created_ms: int = field(default_factory=now_ms)
    updated_ms: int = field(default_factory=now_ms)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Instance:
        values: dict[str, Any] = {f.name: row.get(f.name) for f in dataclasses.fields(cls)}
        return cls(**values)

    def to_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    def move(self, state: str) -> None:
        if state not in TRANSITIONS[self.state]:
            raise ContractError(
                Code.INVALID_STATE, f"{self.instance_id} cannot go {self.state} → {state}"
            )
        self.state = state
        self.updated_ms = now_ms()


def instance_id_for(
    scope: str, conversation_id: str | None, local: str | None, global_apps: frozenset[str]
) -> str:
    """`<app_scope>:<local>`: a core app (`global_apps`) has one global instance (`main`);
    any other app gets one per conversation unless the caller names another."""
    if scope in global_apps:
        return f"{scope}:main"
    return f"{scope}:{local or conversation_id or 'main'}"


@dataclass
class Focus:
    """The instances, the focus stack and what changed since the last `take_changes`.
    `global_apps` are the apps of one global instance each: the core apps."""

    global_apps: frozenset[str] = frozenset()
    instances: dict[str, Instance] = field(default_factory=dict)
    stack: list[str] = field(default_factory=list)
    changed: set[str] = field(default_factory=set)
    events: list[tuple[str, str]] = field(default_factory=list)  # (instance_id, hook)

    @property
    def foreground(self) -> str | None:
        return self.stack[-1] if self.stack else None

    def _set(self, instance: Instance, state: str, hook: str | None = None) -> None:
        instance.move(state)
        self.changed.add(instance.instance_id)
        if hook:
            self.events.append((instance.instance_id, hook))

    def take_changes(self) -> tuple[list[Instance], list[tuple[str, str]]]:
        changed = [self.instances[i] for i in sorted(self.changed) if i in self.instances]
        events, self.changed, self.events = self.events, set(), []
        return changed, events

    def _background_top(self) -> None:
        top = self.foreground
        if top is not None:
            current = self.instances[top]
            current.mode = "background"
            if current.state == "active":
                self._set(current, "backgrounded", "background")

    def _bring_up(self, instance: Instance) -> None:
        instance.mode = "foreground"
        if instance.state in ("backgrounded", "suspended"):
            self._set(instance, "restoring", "restore")
        if instance.state in ("launching", "restoring"):
            self._set(instance, "active", "foreground")
        self.changed.add(instance.instance_id)

    def launch(
        self,
        scope: str,
        conversation_id: str | None,
        local: str | None = None,
        *,
        foreground: bool = True,
    ) -> Instance:
        """Start (or bring forward) an instance and give it the foreground; with
        `foreground` False, start it behind the current top (a running one stays put)."""
        instance_id = instance_id_for(scope, conversation_id, local, self.global_apps)
        instance = self.instances.get(instance_id)
        if instance is not None and instance.live:
            if foreground:
                self.focus(instance_id)
            return instance
        instance = Instance(instance_id, scope, conversation_id)
        self.instances[instance_id] = instance
        if not foreground and self.stack:
            self._set(instance, "launching", "start")
            self._set(instance, "active")
            self._set(instance, "backgrounded", "background")
            self.stack.insert(len(self.stack) - 1, instance_id)
            return instance
        if instance_id != self.foreground:
            self._background_top()
        self._set(instance, "launching", "start")
        if instance_id in self.stack:
            self.stack.remove(instance_id)
        self.stack.append(instance_id)
        self._bring_up(instance)
        return instance

    def focus(self, instance_id: str) -> Instance:
        instance = self._live(instance_id)
        if instance_id != self.foreground:
            self._background_top()
            if instance_id in self.stack:
                self.stack.remove(instance_id)
            self.stack.append(instance_id)
        self._bring_up(instance)
        return instance

    def close(self, instance_id: str, *, failed: str | None = None) -> Instance:
        """Close (or mark failed) an instance; the one below it comes back if it was on top."""
        instance = self._live(instance_id)
        was_top = instance_id == self.foreground
        if failed is not None:
            self._set(instance, "failed", "closing")
        else:
            self._set(instance, "closing", "closing")
            self._set(instance, "closed")
        instance.mode = "background"
        if instance_id in self.stack:
            self.stack.remove(instance_id)
        if was_top and self.stack:
            self._bring_up(self.instances[self.stack[-1]])
        return instance

    def _live(self, instance_id: str) -> Instance:
        instance = self.instances.get(instance_id)
        if instance is None or not instance.live:
            raise ContractError(Code.INSTANCE_NOT_FOUND, f"no running instance {instance_id!r}")
        return instance

    def live_of(self, scope: str) -> list[Instance]:
        return [i for i in self.instances.values() if i.app_scope == scope and i.live]

    def forget_ended(self, keep: int) -> list[str]:
        """Forget the instances that ended (closed or failed: nothing comes after) past
        the `keep` that ended last; their ids. A launch in the same conversation makes a
        new instance whether the old one is remembered or not."""
        ended = [i for i in self.instances.values() if i.state in ("closed", "failed")]
        if len(ended) <= keep:
            return []
        ended.sort(key=lambda i: (i.updated_ms, i.created_ms))
        gone = [i.instance_id for i in ended[: len(ended) - keep]]
        for instance_id in gone:
            del self.instances[instance_id]
            self.changed.discard(instance_id)
        return gone


def startup_target(
    explicit: str | None,
    focus: Focus,
    default_app: str | None,
    records: dict[str, AppRecord],
) -> str:
    """The start-up target: explicit target → a restorable foreground instance → the user's default
    app → chat. Each candidate must be an installed, enabled app; chat always is."""

    def usable(scope: str | None) -> bool:
        record = records.get(scope or "")
        return record is not None and record.enabled and record.install_state == "installed"

    if usable(explicit):
        return str(explicit)
    top = focus.foreground
    if top is not None and usable(focus.instances[top].app_scope):
        return focus.instances[top].app_scope
    if usable(default_app):
        return str(default_app)
    return RECOVERY_APP
