"""`sdk.capabilities`: system effects, asked of the runtime's capability gateway.

`request(capability, purpose, input)` → `{"status": S, "output": ...}` with S one of
`completed`, `cancelled_by_user`, `permission_denied`, `unsupported_on_host`,
`policy_denied`, `expired`, `failed` (with a `code`: `rate_limited`, `invalid_payload`,
...) or `in_doubt`. The gateway checks the app's manifest, its state, the host, the
foreground, the policy and the rate, and asks the user (the purpose is shown to them) unless
a grant covers it; the app never learns a path, a token or an exception from it. A request
made again with the same `request_id` gets the outcome of the first, never a second effect
(inside a handler the id derives from the message handled, so a replay asks again with it).

A request whose tool call ends before the user answers is taken back
(`capability_gateway.withdraw`: it ends `failed`, code `withdrawn`, and its card closes):
the call was cancelled, its handler went on without the answer, or the app's restart cut
it short and it does not run again. The app log keeps each unanswered request with the call
that asked (`ASKING_CALL`) and the id its withdrawal is sent under, taken when it is asked
(so a replayed handler takes the same). One asked outside a call is never taken back: the
message whose handler asked it is handled again after a restart, and asks again with it.
This bookkeeping gives way to a full disk: a row not written costs a request left to
expire, never the answer.

`stop_recording(request_id)` ends the app's own recording (`audio.record`) early: the user's
Stop in its surface.

`answer(request_id, answer)` is the chat app's: the user's answer to a consent card
(once / session / always / deny / dismiss); the runtime refuses it from any other app.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Collection
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from actors.kernel import CallFailed
from contracts import Code

if TYPE_CHECKING:
    from ._app_core import AppCore

log = logging.getLogger("lineup.sdk.capabilities")

GATEWAY: Final = "capability_gateway"
DEFAULT_TIMEOUT_S: Final = 60.0
# The gateway answers when the outcome is recorded; past the request's own deadline it
# needs at most a store round trip and a provider's run.
MARGIN_S: Final = 30.0
# A recording's answer comes once it is over: after the user's yes, as long as it may last.
RECORD: Final = "audio.record"
# The tool call whose handler is running here (set by `_tools` in each handler's task).
ASKING_CALL: ContextVar[str | None] = ContextVar("lineup_sdk_asking_call", default=None)


def _best_effort(write: Callable[..., None], *args: Any) -> None:
    try:
        write(*args)
    except sqlite3.Error as exc:  # a full disk: the request goes on, its row does not
        log.warning("the app log did not keep a capability request: %s", exc)


class CapabilitiesAPI:
    def __init__(self, app: AppCore) -> None:
        self._app = app

    async def request(
        self,
        capability: str,
        purpose: str,
        input: Any = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """Ask for `capability`, telling the user why (`purpose`); `timeout_s` (1 to 600)
        is how long the user has to answer, after which the request is `expired`."""
        app = self._app
        body: dict[str, Any] = {
            "request_id": request_id or app._ids.next(),
            "capability": capability,
            "purpose": purpose,
            "timeout_ms": int(min(max(timeout_s, 1.0), 600.0) * 1000),
        }
        if input is not None:
            body["input"] = input
        # Kept until answered (not when cancelled: then it is to be taken back).
        withdraw_id = app._ids.next()
        seconds = input.get("max_seconds") if isinstance(input, dict) else None
        lasts = float(seconds) if capability == RECORD and isinstance(seconds, int) else 0.0
        _best_effort(app._log.ask_capability, body["request_id"], ASKING_CALL.get(), withdraw_id)
        try:
            reply = await app.call(
                GATEWAY,
                "capability_gateway.request",
                body,
                timeout=body["timeout_ms"] / 1000 + lasts + MARGIN_S,
                id=app._ids.next(),
            )
        except CallFailed as refused:  # the door's or the kernel's word, as a code only
            reply = {"status": str(Code.FAILED), "output": None, "code": refused.code}
        except (TypeError, ValueError):  # an input that is no msgpack value: never sent
            reply = {"status": str(Code.FAILED), "output": None, "code": str(Code.INVALID_PAYLOAD)}
        _best_effort(app._log.capability_answered, body["request_id"])
        return dict(reply)

    async def _withdraw(self, *, calls: Collection[str] = (), keep: Collection[str] = ()) -> None:
        """Take back the unanswered requests asked by `calls`; when none are named (at a
        restart), those of every call but the ones in `keep`, which run again and ask again.
        One asked outside a call is only forgotten then: its message is handled again."""
        app = self._app
        for request_id, call_id, withdraw_id in app._log.unanswered_capabilities():
            if calls and call_id not in calls:
                continue
            if call_id is not None and call_id not in keep:
                body = {"request_id": request_id}
                await app.cast(GATEWAY, "capability_gateway.withdraw", body, id=withdraw_id)
            _best_effort(app._log.capability_answered, request_id)

    async def stop_recording(self, request_id: str) -> None:
        """End the app's own recording (`audio.record`, asked with `request_id`) early, as
        the user's Stop does; the request's answer then comes with what was recorded."""
        await self._app.cast(
            GATEWAY, "capability_gateway.stop", {"request_id": request_id}, id=self._app._ids.next()
        )

    async def answer(self, request_id: str, answer: str) -> None:
        """The user's answer to the consent card `request_id` (the chat app's)."""
        await self._app.cast(
            GATEWAY,
            "capability_gateway.consent",
            {"request_id": request_id, "answer": answer},
            id=self._app._ids.next(),
        )
