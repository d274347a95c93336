"""The router actor: the filter chain and delivery to app inboxes.

`_filter_chain` holds the steps (pure functions over one message); `_delivery` the shapes
that leave the router (app projections, rejection envelopes, the user's envelopes);
`_actor` the handlers. What it takes, from whom and in what shape is its `door` (`lineup
protocol messages --to router`).

**The inbound path.** The transport hands the router each run of the AppServer stream as
a call (`router.inbound`). The router filters it, sends the store one request that
persists the run (`store.inbound.persist`: accepted messages, rejections with their audit,
answers to the agent's rejected messages, the cursor, newly associated conversations, in
one commit) and, without waiting for its answer, hands the agent's tool calls to the tool
router (`tool_router.inbound`): the mailbox holds the store's request before them, and the
tool router knows its calls by id. The store's answer says which messages are fresh; the
router then sends each app its fresh messages (`app.deliver`, per app in stream order, in
chunks well under the kernel's 1 MiB frame), answers an agent's duplicate id through the
outbox, and answers the transport with the cursor, which the transport acks to the
AppServer. Nothing goes back upstream. Every id the handler sends under derives from the
run's, in a fixed order, and the store's answer to a replayed request is its recorded
first one, so a replayed run sends the same messages and each inbox keeps them once.

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
