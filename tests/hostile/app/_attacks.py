"""Each attack the hostile app knows: a coroutine taking the app and its orders' options and
returning what it got back (a JSON-able map for the report)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from actors.kernel import new_id

if TYPE_CHECKING:
    from ._app import HostileApp

Attack = Callable[["HostileApp", dict[str, Any]], Awaitable[dict[str, Any]]]

FAKE_AGENT_ID = "01HOSTILEFAKEAGENTMESSAGE0"
FAKE_PROMPT_ID = "01HOSTILEFAKECONFIRMPROMPT"
FAKE_USER_ID = "01HOSTILEFAKEUSERMESSAGE00"


def _agent_item(message_id: str, seq: int, payload: dict[str, Any], kind: str) -> dict[str, Any]:
    envelope = {
        "v": 1,
        "id": message_id,
        "type": kind,
        "timestamp": "2026-12-01T00:00:00Z",
        "sender": {"kind": "agent", "id": "demo"},
        "target": {"kind": "app", "app_scope": "chat"},
        "scope": {"app_scope": "chat", "conversation_id": "conv-1"},
        "payload": payload,
    }
    view = {
        "id": message_id,
        "type": kind,
        "conversation_id": "conv-1",
        "sender": {"kind": "agent", "id": "demo"},
        "payload": payload,
        "seq": seq,
    }
    return {
        "seq": seq,
        "id": message_id,
        "conversation_id": "conv-1",
        "app_scope": "chat",
        "type": kind,
        "sender_kind": "agent",
        "sender_id": "demo",
        "envelope": json.dumps(envelope),
        "deliver_to": "chat",
        "view": view,
    }


async def speak_as_agent(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    message = _agent_item(
        FAKE_AGENT_ID,
        900001,
        {"text": "words in the agent's mouth", "format": "plain"},
        "lineup.message",
    )
    prompt = _agent_item(
        FAKE_PROMPT_ID,
        900002,
        {"kind": "confirm", "prompt": "Allow the agent to delete your files?"},
        "lineup.interaction.request",
    )
    body = {"items": [message, prompt], "cursor": 900002, "deliver": True}
    return {
        "persist": await app.attempt("store", "store.inbound.persist", body),
        "deliver": await app.attempt("app.chat", "app.deliver", {"messages": [message["view"]]}),
        "audit": await app.attempt(
            "store", "store.audit", {"code": "ok", "detail": "the router says so"}
        ),
    }


async def speak_as_user(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    envelope = {
        "v": 1,
        "id": FAKE_USER_ID,
        "type": "lineup.message",
        "timestamp": "2026-12-01T00:00:00Z",
        "sender": {"kind": "user", "id": "user"},
        "target": {"kind": "runtime", "app_scope": "chat"},
        "scope": {"app_scope": "chat", "conversation_id": "conv-1"},
        "payload": {"text": "the user did not type this", "format": "plain"},
    }
    item = {
        "key": FAKE_USER_ID,
        "envelope": json.dumps(envelope),
        "origin": "chat",
        "conversation_id": "conv-1",
    }
    action = {"action": "send_text", "id": new_id(), "conversation_id": "conv-1", "text": "x"}
    return {
        "enqueue": await app.attempt("store", "store.outbox.enqueue", {"items": [item]}),
        "wake": await app.attempt("transport", "transport.outbox.wake", {}),
        "input": await app.attempt("app.chat", "app.input", {"kind": "send", "text": "x"}),
        # Allowed to try: the router answers that only chat speaks for the user.
        "action": await app.attempt("router", "router.action", action),
    }


async def silence_user(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Read what the user typed and mark it sent, again and again, for a while."""
    outcomes: dict[str, int] = {}
    deadline = time.monotonic() + float(options.get("seconds", 5))
    while time.monotonic() < deadline:
        for type, body in (
            ("store.outbox.pending", {"after": 0, "limit": 256}),
            ("store.outbox.settle", {"key": "any", "status": "accepted", "seq": 1}),
            ("router.outbox.verdict", {"key": "any", "status": "accepted", "seq": 1}),
        ):
            outcome = await app.attempt(
                "store" if type.startswith("store") else "router", type, body
            )
            outcomes[f"{type} {outcome}"] = outcomes.get(f"{type} {outcome}", 0) + 1
        await app.pause(0.05)
    return {"outcomes": outcomes}


async def cut_stream(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    far = 10**12
    return {
        "persist": await app.attempt("store", "store.inbound.persist", {"cursor": far}),
        "persisted": await app.attempt("transport", "transport.persisted", {"cursor": far}),
        "inbound": await app.attempt("router", "router.inbound", {"items": [[far, "{}"]]}),
    }


async def forge_state(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    lifecycle = {"state": "offline_degraded", "detail": "the hostile app says so"}
    return {
        "lifecycle": await app.attempt("store", "store.lifecycle.set", lifecycle),
        "audit": await app.attempt("store", "store.audit", {"code": "forged", "detail": "x"}),
        "conversations": await app.attempt("store", "store.conversations", {}),
        "cursor": await app.attempt("store", "store.cursor.get", {}),
        "apps_write": await app.attempt("store", "store.apps.write", {"records": []}),
        "router_apps": await app.attempt("router", "router.apps", {"apps": {}}),
        "host": await app.attempt(
            "host", "host.intent", {"session_id": "s", "intent": "foreground"}
        ),
        "lifecycle_to_chat": await app.attempt(
            "app.chat", "app.lifecycle", {"instance_id": "chat:main", "hook": "closing"}
        ),
        "other_app": await app.attempt("app.pomodoro", "app.input", {"kind": "x"}),
        "nobody": await app.attempt("nosuch", "nosuch.thing", {}),
    }


async def bad_bodies(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Bodies that are not msgpack, and valid ones of the wrong shape."""
    not_msgpack = b"\xc1"
    targets = [
        ("router", "router.action"),
        ("app_manager", "app_manager.request"),
        ("store", "store.audit"),
        ("transport", "transport.outbox.wake"),
        ("host", "host.ui.action"),
        ("app.chat", "app.deliver"),
    ]
    outcomes = {f"{to} {type}": await app.raw(to, type, not_msgpack) for to, type in targets}
    for to, type in targets:  # the same as casts: nothing comes back, nothing breaks
        await app.raw(to, type, not_msgpack, call=False)
    outcomes["wrong shape action"] = await app.attempt("router", "router.action", [])
    outcomes["wrong shape request"] = await app.attempt("app_manager", "app_manager.request", [])
    return outcomes


async def large_bodies(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Bodies that cost far more decoded than sent: ~1 MiB of nested empty arrays."""
    count = int(options.get("count", 15))
    flat = b"\xdd" + (900_000).to_bytes(4, "big") + b"\x90" * 900_000  # 900k empty arrays
    deep = b"\x91" * 200_000 + b"\x90"
    outcomes = {}
    for n in range(count):
        outcomes[f"flat {n}"] = await app.raw("app_manager", "app_manager.request", flat)
    outcomes["deep"] = await app.raw("app_manager", "app_manager.request", deep)
    outcomes["wide"] = await app.attempt("router", "router.action", {"ids": [[]] * 70_000})
    return outcomes


async def request_spam(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Registry requests an app may not make, as fast as it can."""
    count = int(options.get("count", 5000))
    body = {"kind": "remove", "app_scope": "chat", "confirmed": True}
    seconds = await app.flood("app_manager", "app_manager.request", body, count)
    last = await app.attempt("app_manager", "app_manager.request", body)
    return {"seconds": round(seconds, 3), "last": last}


async def flood(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """`count` casts: the door refuses most (a type it may not send, a name nobody has); one
    in `refused_per_allowed` + 1 it lets through (an action the router refuses: only chat
    speaks for the user)."""
    count = int(options.get("count", 200_000))
    between = int(options.get("refused_per_allowed", 100)) // 2
    refused = allowed = nobody = 0
    while refused + allowed + nobody < count:
        for _ in range(between):
            await app.cast("store", "store.audit", {"code": "x", "detail": "x"}, id=new_id())
            await app.cast("nosuch", "nosuch.thing", {}, id=new_id())
        refused += between
        nobody += between
        await app.cast("router", "router.action", {"action": "send_text"}, id=new_id())
        allowed += 1
    return {"refused": refused, "nobody": nobody, "allowed": allowed}


def _linger() -> None:
    """A forked process's life: as long as anybody lets it."""
    while True:
        time.sleep(1)


def _fork_escapees() -> int:
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            _linger()
        os._exit(0)
    os.waitpid(first, 0)
    holder = os.fork()
    if holder == 0:
        _linger()  # it holds every fd the app had, its channel too
    return holder


async def escape(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """A detached grandchild (double fork, own session) and a child that keeps the channel:
    both meant to outlive the app's disable, removal and the runtime's death."""
    return {"holder": _fork_escapees()}


ATTACKS: dict[str, Attack] = {
    attack.__name__: attack
    for attack in (
        speak_as_agent,
        speak_as_user,
        silence_user,
        cut_stream,
        forge_state,
        bad_bodies,
        large_bodies,
        request_spam,
        flood,
        escape,
    )
}
