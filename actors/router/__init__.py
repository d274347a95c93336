"""The router actor: the filter chain and delivery to app inboxes.

`_filter_chain` holds the steps (pure functions over one message); `_delivery` the shapes
that leave the router (app projections, rejection envelopes, the user's envelopes);
`_actor` the handlers. What it takes, from whom and in what shape is its `door` (`lineup
protocol messages --to router`).

**The inbound path.** The transport hands the router each run of the AppServer stream as
a call (`router.inbound`). The router filters it and sends the store one request that
persists the run (`store.inbound.persist`: accepted messages, rejections with their audit,
answers to the agent's rejected messages, the cursor, newly associated conversations, in
one commit). As soon as that request is sent, and without waiting for its answer (the
mailbox holds it before anything that follows), the router hands the agent's tool calls
to the tool router (`tool_router.inbound`), which knows its calls by id, and each app its
messages (`app.deliver`, per app in stream order, in chunks well under the kernel's 1 MiB
frame), whose log knows its messages by id: a message the stream brings twice is kept
once. The store's answer, awaited beside the next runs (the run's delivery held until
then), names the duplicates (an id stored under another seq), which the router answers
through the outbox, and the cursor, with which it answers the transport; the transport
acks it to the AppServer. Nothing goes back upstream. Every id the handler
sends under derives from the run's, in a fixed order, and the store's answer to a replayed
request is its recorded first one, so a replayed run sends the same messages and each
inbox keeps them once.

**The outbound path.** An app's declarative action (`router.action`: only the chat app
speaks for the user) becomes the user's envelope in the outbox (`store.outbox.enqueue`),
then `transport.outbox.wake`; an action it refuses is answered to the app
(`app.action.state` {`id`, `state: rejected`, `code`, `detail`}).
"""

from ._actor import RouterActor
from ._delivery import app_actor, project
from ._filter_chain import Accepted, FilterContext, Rejected, check_inbound

__all__ = [
    "Accepted",
    "FilterContext",
    "Rejected",
    "RouterActor",
    "app_actor",
    "check_inbound",
    "project",
]
