"""The supervisor's control socket, for the debug CLI: a Unix socket, mode 0600.

It is the operator's: it kills and starts actors, redrives dead letters, injects messages
as `debug` and stops the runtime. UI sessions have a door of their own (`_ui_socket`,
`ui.sock`) that can do none of that; this one refuses their `ui` requests.

One request frame per connection, one response frame (`{"ok": true, ...}` or
`{"ok": false, "error": ...}`), except `trace`, which streams records until the client
hangs up. The frames use the kernel codec; the UI socket speaks the same framing.

Requests: `status`, `actors`, `mailbox`, `lifecycle`, `trace`, and those that change
things: `kill`, `redrive`, `send` (as `debug`), `start_child`, `stop_child`, `stop`. A `ui`
request is refused with an error naming the UI socket. An error answer is one sentence for
a person: an unknown actor name lists the known ones with a "did you mean".

`status` is `degraded` while a child is failed or unresponsive, with `reason` naming each
one. `actors` gives each child's `state` (`unresponsive` when it misses heartbeats),
`silent_s` (since it last said anything), `inflight` and `inflight_oldest_s` (the age of
the oldest message it holds) and `held` (of those, the ones it holds after their handler
until their effect outside is done: the transport's until the AppServer's verdict), besides
its mailbox counts. `send` with `wait` (seconds) makes the message a call and answers with
its outcome: `handled` (and the reply), `refused` (the handler's code: an unknown type is
`unknown_type`), `dead`, or the state it is still in; a message the door refuses is an
error naming the code.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import trio

from .._client import (
    CONTROL_SOCKET,
    UI_SOCKET,
    ControlError,
    control_request,
    control_stream,
    socket_request,
)
from .._ids import new_id
from .._specs import ChildSpec
from ..wire import FrameDecoder, FrameError, encode, pack_body, unpack_body
from ._gate import Refusal
from ._inspect import _plain, mailbox_counts, mailbox_listing
from ._mailbox import DISK_FULL_REASON, State, disk_full
from ._supervisor_face import SupervisorFace
from ._switchboard import TraceRecord
from ._wire import ProtocolViolation, classify

log = logging.getLogger("lineup.control")


# Answers one request (a response map, `ok` added); raising KeyError, ValueError,
# ProcessLookupError or ProtocolViolation answers with that error.
Dispatch = Callable[[SupervisorFace, dict[str, Any]], Awaitable[dict[str, Any]]]
# A request answered by a stream of frames on the connection itself (`trace`).
Streamer = Callable[[SupervisorFace, trio.SocketStream, dict[str, Any]], Awaitable[None]]


async def serve_control(
    supervisor: SupervisorFace, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    await serve_socket(
        supervisor,
        CONTROL_SOCKET,
        _dispatch,
        streams={"trace": _stream_trace},
        task_status=task_status,
    )


async def serve_socket(
    supervisor: SupervisorFace,
    filename: str,
    dispatch: Dispatch,
    *,
    streams: Mapping[str, Streamer] | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `DATA_DIR/filename`, mode 0600, one request per connection, until cancelled."""
    path = supervisor.data_dir / filename
    path.unlink(missing_ok=True)
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Created 0600, never wider even for a moment: whoever connects acts as the user who
    # runs the runtime (the operator on the control socket, the user on the UI socket).
    old_umask = os.umask(0o177)
    try:
        await sock.bind(str(path))
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    sock.listen(128)
    listener = trio.SocketListener(sock)
    task_status.started()
    try:
        await trio.serve_listeners(
            partial(_serve_one, supervisor, filename, dispatch, streams or {}), [listener]
        )
    finally:
        path.unlink(missing_ok=True)


async def _serve_one(
    supervisor: SupervisorFace,
    filename: str,
    dispatch: Dispatch,
    streams: Mapping[str, Streamer],
    stream: trio.SocketStream,
) -> None:
    # A failure here would end `serve_listeners`, and the whole runtime with it; a client
    # that hangs up before its answer is no failure.
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await _answer(supervisor, filename, dispatch, streams, stream)


async def _answer(
    supervisor: SupervisorFace,
    filename: str,
    dispatch: Dispatch,
    streams: Mapping[str, Streamer],
    stream: trio.SocketStream,
) -> None:
    decoder = FrameDecoder()
    async with stream:
        request = None
        while request is None:
            data = await stream.receive_some(65536)
            if not data:
                return
            try:
                frames = decoder.feed(data)
            except FrameError as exc:
                await stream.send_all(encode({"type": "error", "ok": False, "error": str(exc)}))
                return
            request = frames[0] if frames else None
        streamer = streams.get(request["type"])
        if streamer is not None:
            await streamer(supervisor, stream, request)
            return
        try:
            response = await dispatch(supervisor, request)
            response.setdefault("ok", True)
        except KeyError as exc:  # str() of a KeyError quotes its message
            response = {"ok": False, "error": str(exc.args[0] if exc.args else exc)}
        except (ValueError, ProcessLookupError, ProtocolViolation) as exc:
            response = {"ok": False, "error": str(exc)}
        except Exception as exc:  # a malformed request (wrong field types) is the client's
            log.warning("bad request on %s: %r", filename, request, exc_info=True)
            response = {"ok": False, "error": f"bad request: {exc.__class__.__name__}: {exc}"}
        response["type"] = "response"
        await stream.send_all(encode(response))


async def _dispatch(supervisor: SupervisorFace, request: dict[str, Any]) -> dict[str, Any]:
    kind = request["type"]
    # Reads go through a read-only connection of their own, never the switchboard's, whose
    # transaction may be open.
    store = supervisor.inspector
    assert store is not None and supervisor.switchboard is not None
    if kind == "status":
        return _status(supervisor)
    if kind == "lifecycle":
        actor = request.get("actor")
        return {"events": [e for e in supervisor.lifecycle if actor is None or e["actor"] == actor]}
    if kind == "actors":
        return await _actors(supervisor, store, bool(request.get("stats")))
    if kind == "mailbox":
        box: str | None = request.get("name")
        if box is not None and box not in supervisor.children:
            known = mailbox_counts(store)
            if box not in known:
                raise KeyError(unknown_name(box, [*supervisor.children, *known]))
        messages = mailbox_listing(
            store,
            box,
            body=bool(request.get("body")),
            limit=int(request.get("limit", 100)),
            dead_only=bool(request.get("dead")),
        )
        return {"messages": messages}
    if kind == "redrive":
        done = await supervisor.switchboard.request("redrive", "", str(request["id"]))
        if not done:
            raise KeyError(f"no dead message with id {request['id']!r}")
        return {"redriven": request["id"]}
    if kind == "kill":
        if request.get("name") not in supervisor.children:
            raise KeyError(unknown_name(str(request.get("name")), list(supervisor.children)))
        return {"name": request["name"], "pid": supervisor.kill_child(str(request["name"]))}
    if kind == "start_child":
        spec = ChildSpec.model_validate(request["spec"])
        child = await supervisor.start_child(spec)
        return {"name": spec.name, "pid": child.pid, "state": child.state}
    if kind == "stop_child":
        await supervisor.stop_child(str(request["name"]))
        return {"name": request["name"]}
    if kind == "send":
        # Inject a message as the operator ("debug"): it goes through the same checks. With
        # `wait`, it is a call, and its outcome is awaited that long.
        wait = float(request.get("wait") or 0)
        message_id = await inject(
            supervisor,
            "debug",
            str(request["to"]),
            request["message_type"],
            request.get("body"),
            message_id=request.get("id"),
            call=wait > 0,
        )
        if wait <= 0:
            return {"id": message_id}
        return {"id": message_id, **await _outcome(store, message_id, min(wait, 60.0))}
    if kind == "ui":
        # A UI session has its own door, which holds no operator power; a UI client that
        # reached this socket would hold it all.
        raise ValueError(
            f"UI sessions use the UI socket (DATA_DIR/{UI_SOCKET}), not the control socket"
        )
    if kind == "stop":
        supervisor.request_stop()
        return {}
    raise ValueError(f"unknown request {kind!r}")


def _status(supervisor: SupervisorFace) -> dict[str, Any]:
    assert supervisor.switchboard is not None
    unresponsive = supervisor.unresponsive()
    state = supervisor.state
    reasons = [f"{name} failed" for name in supervisor.degraded]
    reasons += [
        f"{name} unresponsive (no heartbeat answer for {silent:.1f} s)"
        for name, silent in unresponsive.items()
    ]
    if unresponsive and state == "running":
        state = "degraded"
    if supervisor.switchboard.disk_full or disk_full(supervisor.data_dir):
        reasons.append(DISK_FULL_REASON)
        state = "degraded" if state == "running" else state
    status: dict[str, Any] = {
        "state": state,
        "pid": os.getpid(),
        "uptime_s": round(supervisor.uptime_s, 3),
        "started_at": supervisor.started_wall,
        "degraded": supervisor.degraded + list(unresponsive),
        "unresponsive": list(unresponsive),
        "strategy": supervisor.config.strategy,
        "actors": len(supervisor.children),
        "batches": supervisor.switchboard.batches,
        "frames": supervisor.switchboard.frames,
        "tracers": len(supervisor.switchboard.tracers),
    }
    if reasons:
        status["reason"] = "; ".join(reasons)
    return status


async def _actors(supervisor: SupervisorFace, store: Any, stats: bool) -> dict[str, Any]:
    assert supervisor.switchboard is not None
    # In flight is what the switchboard holds, exactly; the file is asked the rest.
    counts = mailbox_counts(store, inflight=False)
    endpoints = supervisor.switchboard.endpoints
    unresponsive = supervisor.unresponsive()
    actors: list[dict[str, Any]] = []
    for name, child in supervisor.children.items():
        c = counts.get(name, {})
        ep = endpoints.get(name)
        record: dict[str, Any] = {
            "name": name,
            "pid": child.pid,
            "state": "unresponsive" if name in unresponsive else child.state,
            "silent_s": round(child.silent_s(), 3),
            "restarts": child.restarts,
            "uptime_s": round(time.monotonic() - child.started_at, 3) if child.pid else None,
            "pending": c.get("pending", 0),
            "inflight": len(ep.inflight) if ep is not None else 0,
            # Of those, handled and held until their effect outside is done (`kernel.hold`).
            "held": len(ep.held) if ep is not None else 0,
            "inflight_oldest_s": _oldest_age(store, ep.inflight) if ep is not None else None,
            "dead": c.get("dead", 0),
            "last_exit": child.last_exit,
            "refused": supervisor.gates[name].statistics() if name in supervisor.gates else {},
        }
        if stats:
            record["statistics"] = await supervisor.actor_statistics(name)
        actors.append(record)
    return {"actors": actors}


def unknown_name(name: str, valid: list[str]) -> str:
    """One sentence for a name that is no actor's: the close ones, then every valid one."""
    choices = sorted(set(valid))
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    listed = ", ".join(choices) if choices else "none"
    return f"no actor or mailbox named {name!r}{hint} (known: {listed})"


def _oldest_age(store: Any, inflight: dict[int, None]) -> float | None:
    """Seconds since the oldest message in flight to an actor was sent (None: nothing)."""
    if not inflight:
        return None
    row = store.message_by_seq(min(inflight))
    return None if row is None else round(max(0.0, time.time() - row.created_ms / 1000), 3)


async def _outcome(store: Any, message_id: str, wait: float) -> dict[str, Any]:
    """What became of the operator's call `message_id` within `wait` seconds: `handled`
    (with the reply), `refused` (with the handler's code), `dead`, or still `pending` /
    `inflight`. Read from the mailbox file, as the switchboard commits it."""
    with trio.move_on_after(wait):
        while True:
            reply = store.reply_for(message_id, "debug")
            if reply is not None:
                answer = unpack_body(reply)
                error = answer.get("error")
                if isinstance(error, dict):
                    return {
                        "outcome": "refused",
                        "code": str(error.get("code")),
                        "detail": str(error.get("detail", "")),
                    }
                body = answer.get("body")
                value = unpack_body(body) if isinstance(body, bytes) else body
                return {"outcome": "handled", "reply": _plain(value)}
            row = store.message(message_id, sender="debug")
            if row is not None and row.state is State.DEAD:
                return {"outcome": "dead", "error": row.error}
            await trio.sleep(0.02)
    row = store.message(message_id, sender="debug")
    state = row.state.name.lower() if row is not None else "unknown"
    return {
        "outcome": state,
        "detail": f"not handled within {wait:g} s: {state} in {row.recipient}'s mailbox"
        if row is not None
        else f"not handled within {wait:g} s",
    }


async def inject(
    supervisor: SupervisorFace,
    sender: str,
    to: str,
    message_type: Any,
    body: Any,
    *,
    message_id: Any = None,
    call: bool = False,
) -> str:
    """Store a message from a socket client as `sender`, through the same door checks as a
    child's message; a refused one raises ValueError and is counted against `sender`."""
    frame = {
        "v": 1,
        "id": message_id or new_id(),
        "to": to,
        "type": message_type,
        "body": pack_body(body),
    }
    if call:
        frame["call"] = True
    op, payload = classify(frame)
    gate = supervisor.gate(sender)
    try:
        gate.check(payload)
    except Refusal as refusal:
        gate.refuse(payload, refusal)
        raise ValueError(f"refused ({refusal.code}): {refusal.detail}") from None
    assert supervisor.switchboard is not None  # the control socket opens after it
    await supervisor.switchboard.request(op, sender, payload)
    return str(frame["id"])


async def _stream_trace(
    supervisor: SupervisorFace, stream: trio.SocketStream, request: dict[str, Any]
) -> None:
    actor = request.get("actor")
    type_prefix = request.get("type_prefix") or ""
    send, receive = trio.open_memory_channel[TraceRecord](4096)
    dropped = 0

    def tracer(record: TraceRecord) -> None:
        nonlocal dropped
        if actor and actor not in (record.sender, record.to):
            return
        if not record.type.startswith(type_prefix):
            return
        try:
            send.send_nowait(record)
        except trio.WouldBlock:
            dropped += 1  # a slow reader loses trace lines, never slows the runtime

    assert supervisor.switchboard is not None
    supervisor.switchboard.tracers.append(tracer)
    gone = (trio.BrokenResourceError, trio.ClosedResourceError)
    try:
        async with trio.open_nursery() as nursery:

            async def end_at_hangup() -> None:
                # A quiet runtime sends nothing, so only reading notices a client gone.
                with contextlib.suppress(*gone):
                    while await stream.receive_some(1024):
                        pass
                nursery.cancel_scope.cancel()

            nursery.start_soon(end_at_hangup)
            # Caught here, inside the nursery: leaving it, they would be wrapped in an
            # exception group that nothing above expects, and end the control server.
            with contextlib.suppress(*gone):
                await stream.send_all(encode({"type": "response", "ok": True}))
                async for record in receive:
                    line = {**vars(record), "message_type": record.type, "dropped": dropped}
                    line["type"] = "trace"
                    await stream.send_all(encode(line))
            nursery.cancel_scope.cancel()
    finally:
        supervisor.switchboard.tracers.remove(tracer)


__all__ = [
    "CONTROL_SOCKET",
    "UI_SOCKET",
    "ControlError",
    "control_request",
    "control_stream",
    "inject",
    "serve_control",
    "serve_socket",
    "socket_request",
]
