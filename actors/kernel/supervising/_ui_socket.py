"""The supervisor's UI socket: the user's side's own door, a Unix socket, mode 0600.

A UI session (the terminal chat, `lineup chat send`, the web host for its pages) speaks to
the host actor through it and through nothing else. It takes two kinds of request:

- a `host.*` message type, `{"type": "host.ui.action", "body": {...}, "id"?: ...}`: stored
  for the host as sender `ui`, through the same door checks as any message (`inject`);
  answered with `{"id": ...}` once stored. The host's door says which `host.*` types a UI
  session may send; any other is refused (`sender_not_allowed`) and counted against `ui`;
- `status`: the runtime's state and start time, what a UI needs to tell its user whether
  the runtime is up, starting or stopping (with the lifecycle the store keeps).

Nothing else: no kill, redrive, send, start or stop of a child, no stop of the runtime,
no mailbox or trace. Those are the operator's, on the control socket (`_control`), and a UI
client holds no operator power. The framing is the control socket's: one request frame and
one response frame per connection.
"""

from __future__ import annotations

from typing import Any

import trio

from .._door import UI
from ._control import UI_SOCKET, inject, serve_socket
from ._supervisor_face import SupervisorFace

HOST = "host"  # the one actor a UI session reaches
HOST_PREFIX = "host."


async def serve_ui(
    supervisor: SupervisorFace, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    await serve_socket(supervisor, UI_SOCKET, _dispatch, task_status=task_status)


async def _dispatch(supervisor: SupervisorFace, request: dict[str, Any]) -> dict[str, Any]:
    kind = request["type"]
    if kind == "status":
        return {"state": supervisor.state, "started_at": supervisor.started_wall}
    if isinstance(kind, str) and kind.startswith(HOST_PREFIX):
        # The recipient is fixed and the sender is `ui`, whatever the request says: the host
        # tells a user's action from the operator's injections and from what an actor says.
        body = request.get("body")
        message_id = await inject(supervisor, UI, HOST, kind, body, message_id=request.get("id"))
        return {"id": message_id}
    raise ValueError(
        f"the UI socket takes host.* messages and status, not {kind!r}"
        " (the operator's requests are on the control socket)"
    )


# -- the client side, blocking, for a UI ---------------------------------------------------
