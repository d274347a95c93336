"""The client end of the AppServer's WebSocket (docs/protocol.md), one copy for both of
its clients: the runtime's transport (role `runtime`) and the agent peer (role `agent`).

Both speak the same frames (§1), so the link is role-neutral: hello, sync from a cursor,
live delivery, cumulative acks, submissions resent with their idempotency key until their
verdict, heartbeats, reconnects with backoff and jitter. What a role does with it (the
runtime's cursor in its store, the agent's cursor in its state dir) stays with its user.
It imports only `contracts`, trio and trio-websocket, so the runtime and a peer
may both import it without importing each other.

- `_link`: `Link`, one connection kept up across drops, and `open_websocket`;
- `_shallow`: `read_stream_frame`, a stream frame read down to its messages' own text, for
  a receiver that validates every message's text itself (`Link(raw_messages=True)`: the
  runtime's router does).

Why a package of its own, and not the transport's or the agent's: in the transport, the
agent peer would import an actor; in the agent, the runtime would import a peer; two copies
would drift. The contracts cannot hold it either: they import only the standard library and
their typing and serialization libraries, and the link needs trio and trio-websocket. What
is the runtime's stays in `actors/transport`: the cursor from the store, batching to the
router, the outbox, the lifecycle.
"""

from ._link import (
    MAX_SUBMIT_BYTES,
    Link,
    LinkFailed,
    LinkState,
    LinkStatistics,
    Received,
    Submission,
    open_websocket,
)
from ._shallow import StreamFrame, read_stream_frame

__all__ = [
    "MAX_SUBMIT_BYTES",
    "Link",
    "LinkFailed",
    "LinkState",
    "LinkStatistics",
    "Received",
    "StreamFrame",
    "Submission",
    "open_websocket",
    "read_stream_frame",
]
