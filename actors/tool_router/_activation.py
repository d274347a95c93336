"""Getting a call's app ready: launch it, bring it forward, or run at once.

A call runs at once when its app has a live instance in the call's conversation (in the
foreground, for a `foreground_required` tool) and no activation of that instance is under
way; an `activation_not_required` call runs at once whenever its app's process is up.
Otherwise the call is `starting`: the first one asks the app manager to launch or focus the
instance, and every call that needs the same instance waits behind it and runs after it, in
arrival order (`activation_ready`); if the activation fails, each waiting call ends with
its code. A tool that asks for it gets the previous foreground back when it ends.

A launch puts the instance in the foreground or, for a tool whose `launch_policy.focus` is
background, behind the current top. A tool with `restore_focus` gives the previous
foreground back when it ends, unless another open call of the same instance still wants it
in front (a call that ran on it meanwhile, whose tool focuses the foreground): that call
inherits the duty (recorded in its history, so a restart keeps it) and the previous
foreground comes back when it ends, or stays behind if its tool keeps its app in front. A
call's end never takes the front from a call still running there.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from actors.kernel import CallFailed, new_id
from contracts import Code, ContractError

from ._calls import SLOT_ACTIVATION, SLOT_STARTING, Call, envelope, outbox_item
from ._deadlines import HANDLING as RUNTIME_OPERATION

if TYPE_CHECKING:
    from ._router_face import RouterFace

log = logging.getLogger("lineup.tool_router")

ACTIVATION_TIMEOUT_S: Final = 90.0  # an app's first start verifies and jails it


def _key(call: Call) -> tuple[str, str]:
    return (call.app_scope, call.conversation_id)


def _codes(code: str) -> Code:
    try:
        return Code(code)
    except ValueError:  # the kernel's own (a timeout): the app did not come up
        return Code.APP_START_FAILED


class Activations:
    def __init__(self, router: RouterFace) -> None:
        self.router = router
        self.waiting: dict[tuple[str, str], list[Call]] = {}

    def _instance(self, call: Call) -> tuple[str, str] | None:
        """The live instance of the call's app in its conversation: (id, mode)."""
        app = self.router.apps.get(call.app_scope)
        if app is None:
            return None
        for instance_id, (conversation, mode) in app.instances.items():
            if conversation == call.conversation_id:
                return instance_id, mode
        return None

    def ready(self, call: Call) -> bool:
        requirement = call.tool.get("activation_requirement", "app_ready")
        app = self.router.apps.get(call.app_scope)
        if requirement == "activation_not_required":
            return app is not None and bool(app.instances)
        if _key(call) in self.waiting:
            return False
        instance = self._instance(call)
        if instance is None:
            return False
        call.instance_id = instance[0]
        return requirement != "foreground_required" or self.router.foreground == instance[0]

    async def request(self, call: Call) -> None:
        """Run the call now if its app is ready, else activate it (or wait behind)."""
        if self.ready(call):
            await self.router.dispatch(call)
            return
        if call.tool.get("launch_policy", {}).get("launch") == "never":
            await self.router.finish(
                call,
                error=ContractError(
                    Code.TOOL_NOT_VISIBLE,
                    f"{call.app_scope} is not running and is not launched for it",
                ),
            )
            return
        if call.state != "starting":
            call.state = "starting"
            call.note("starting")
            env = envelope(call, "lineup.tool.starting", {}, id=call.slot_id(SLOT_STARTING))
            self.router.write({"calls": [call.to_row()], "outbox": [outbox_item(env)]})
            await self.router.show(call, "starting")
        key = _key(call)
        queue = self.waiting.setdefault(key, [])
        queue.append(call)
        if len(queue) == 1:
            self.router.nursery.start_soon(self._activate, key)

    async def _activate(self, key: tuple[str, str]) -> None:
        """Launch or focus the instance the calls waiting under `key` need, then run them
        in arrival order: each round after the app manager's answer is a step of the
        router's own (the answer is waited for outside any step)."""
        while self.waiting.get(key):
            calls = [c for c in self.waiting[key] if not c.done]
            if not calls:
                break
            foreground = any(_focus(c) == "foreground" for c in calls)
            previous = self.router.foreground
            try:
                result = await self._launch(calls[0], foreground)
            except CallFailed as exc:
                async with self.router.steps.own():
                    await self._failed(key, ContractError(_codes(exc.code), exc.detail))
                return
            async with self.router.steps.own():
                await self._ready(key, str(result.get("instance_id") or ""), foreground, previous)
        self.waiting.pop(key, None)

    async def _ready(
        self, key: tuple[str, str], instance_id: str, foreground: bool, previous: str | None
    ) -> None:
        """The instance is up (and in front if asked): the calls that waited for it run."""
        taken = list(self.waiting[key])
        del self.waiting[key][: len(taken)]
        for call in taken:
            if call.done:
                continue
            call.instance_id = instance_id or call.instance_id
            facts: dict[str, Any] = {"instance_id": call.instance_id}
            if foreground and previous and previous != instance_id and _restores(call):
                call.previous_foreground = facts["restores"] = previous
            call.note("activation_ready", **facts)
            # A runtime operation's `started` says it is ready, in front and running:
            # the agent gets no separate receipt for the activation.
            if call.tool.get("handling") != RUNTIME_OPERATION:
                env = envelope(
                    call, "lineup.tool.activation_ready", {}, id=call.slot_id(SLOT_ACTIVATION)
                )
                self.router.write({"outbox": [outbox_item(env)]})
            await self.router.dispatch(call)

    async def _launch(self, call: Call, foreground: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "launch",
            "app_scope": call.app_scope,
            "conversation_id": call.conversation_id,
        }
        if not foreground:
            body["mode"] = "background"
        row = await self.router.call(
            "app_manager", "app_manager.request", body, timeout=ACTIVATION_TIMEOUT_S, id=new_id()
        )
        return dict((row.get("request") or {}).get("result") or {})

    async def _failed(self, key: tuple[str, str], error: ContractError) -> None:
        for call in self.waiting.pop(key, []):
            if call.done:
                continue
            payload = {"code": str(error.code), "detail": error.detail[:500]}
            env = envelope(
                call, "lineup.tool.activation_failed", payload, id=call.slot_id(SLOT_ACTIVATION)
            )
            self.router.write({"outbox": [outbox_item(env)]})
            await self.router.finish(call, error=error)

    async def ended(self, call: Call) -> None:
        """The previous foreground comes back once the call that took its place ends, and
        no other open call of the instance still wants it in front. One that does (a call
        that ran on it while it was in front) inherits the duty if its tool restores the
        focus (the previous foreground comes back when that one ends), or keeps its app in
        front if its tool says so: a call's end never takes the front from a call still
        running there."""
        previous = call.previous_foreground
        if previous is None or self.router.foreground != call.instance_id:
            return
        others = [
            c
            for c in self.router.calls.values()
            if c is not call and not c.done and c.instance_id == call.instance_id
        ]
        if any(c.previous_foreground for c in others):
            return  # that one gives it back
        heir = next((c for c in others if _focus(c) == "foreground"), None)
        if heir is None:
            self.router.nursery.start_soon(self._refocus, previous)
            return
        if not _restores(heir):
            return  # it keeps its app in front after it, as its tool says
        heir.previous_foreground = previous
        heir.note("front_inherited", restores=previous, from_call=call.call_id)
        self.router.write({"calls": [heir.to_row()]})

    async def _refocus(self, instance_id: str) -> None:
        try:
            await self.router.call(
                "app_manager",
                "app_manager.request",
                {"kind": "focus", "instance_id": instance_id},
                timeout=ACTIVATION_TIMEOUT_S,
                id=new_id(),
            )
        except CallFailed as exc:  # it closed meanwhile: nothing to restore
            log.info("could not restore the focus of %s: %s", instance_id, exc)


def _focus(call: Call) -> str:
    policy = call.tool.get("launch_policy", {})
    if policy.get("focus"):
        return str(policy["focus"])
    required = call.tool.get("activation_requirement") == "foreground_required"
    return "foreground" if required else "background"


def _restores(call: Call) -> bool:
    return bool(call.tool.get("launch_policy", {}).get("restore_focus", True))
