"""Dynamic children started and stopped on an actor's behalf (`Actor.supervise`).

The runtime names one actor its app supervisor (`RuntimeConfig.app_supervisor`, the app
manager): it alone may ask for children, and only for `app.*` names that are not static
children. Everything is checked here, in the supervisor; the answer is a `kernel.reply`
with the request's `corr` (refused: `not_permitted`, `invalid_spec`). The request is not
durable: an actor that restarts and replays its handler asks again, so both operations are
idempotent. The supervisor refuses a delegated `app.*` spec that is not jailed in its own
scope's directory.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from pydantic import ValidationError

from .._specs import ChildSpec
from ..wire import Channel, ChannelClosed, Frame, pack_body
from ._supervisor_face import SupervisorFace

log = logging.getLogger("lineup.supervisor")


class NotPermitted(Exception):
    pass


def _check_requester(supervisor: SupervisorFace, requester: str) -> None:
    if requester != supervisor.config.app_supervisor:
        raise NotPermitted(f"{requester!r} may not start or stop children")


def _check_name(supervisor: SupervisorFace, name: str) -> None:
    if not name.startswith("app."):
        raise NotPermitted(f"{name!r} is not an app's process (app.*)")
    existing = supervisor.children.get(name)
    if existing is not None and not existing.dynamic:
        raise NotPermitted(f"{name!r} is a static child of the runtime")


async def _start(supervisor: SupervisorFace, raw: dict[str, Any]) -> dict[str, Any]:
    # An app's door is the runtime's app door, whatever the request says it is.
    spec = ChildSpec.model_validate(raw).model_copy(update={"door": supervisor.config.app_door})
    _check_name(supervisor, spec.name)
    if spec.isolation is None or spec.isolation.scope != spec.name.removeprefix("app."):
        # An app started for an actor is always jailed, in its own scope's directory.
        raise NotPermitted(f"{spec.name!r} must be isolated in apps/{spec.name[4:]}")
    existing = supervisor.children.get(spec.name)
    if existing is not None and existing.state not in ("stopped", "failed"):
        return {"name": spec.name, "pid": existing.pid, "state": existing.state}
    child = await supervisor.start_child(spec)
    return {"name": spec.name, "pid": child.pid, "state": child.state}


async def _stop(supervisor: SupervisorFace, name: str) -> dict[str, Any]:
    _check_name(supervisor, name)
    if name in supervisor.children:
        await supervisor.stop_child(name)
    return {"name": name, "state": "stopped"}


async def supervise_for(
    supervisor: SupervisorFace, requester: str, channel: Channel, frame: Frame
) -> None:
    """Run one `kernel.supervise` request of `requester` and answer it on `channel`."""
    reply: Frame = {"type": "kernel.reply", "corr": frame["corr"]}
    try:
        _check_requester(supervisor, requester)
        if frame["op"] == "start":
            result = await _start(supervisor, frame["spec"])
        else:
            result = await _stop(supervisor, str(frame["name"]))
        reply["body"] = pack_body(result)
    except NotPermitted as exc:
        reply["error"] = {"code": "not_permitted", "detail": str(exc)}
    except (ValidationError, ValueError, KeyError) as exc:
        reply["error"] = {"code": "invalid_spec", "detail": str(exc)[:1000]}
    except Exception as exc:  # a failed spawn is the requester's answer
        log.exception("%s: supervise %s failed", requester, frame["op"])
        reply["error"] = {"code": "failed", "detail": f"{type(exc).__name__}: {exc}"[:1000]}
    log.info("%s: supervise %s %s", requester, frame["op"], reply.get("error") or "done")
    # The requester may have restarted meanwhile: its next incarnation asks again.
    with contextlib.suppress(ChannelClosed):
        channel.send_nowait(reply)
