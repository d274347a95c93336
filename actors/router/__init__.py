"""The router actor: the filter chain and delivery to app inboxes.

`_filter_chain` holds the steps (pure functions over one message); `_delivery` the shapes
that leave the router (app projections, rejection envelopes, the user's envelopes);
`_actor` the handlers. Messages:

- `router.inbound` (from the transport) `items` [[seq, JSON text]]: filter, then one
  `store.inbound.persist` cast with `deliver: true` and each accepted item's app
  projection (`view`); the store, after its commit, sends `app.deliver` to each app and
  `transport.persisted` itself (the store's docstring says why);
- `router.inbound.duplicates` (from the store) `items` [{id, seq, envelope}]: agent
  messages whose id was stored under another seq; each gets its `duplicate` answer in the
  outbox (`store.outbox.enqueue`), then `transport.outbox.wake`;
- `router.action` (from an app) `action`, `id`, `conversation_id`, `text` / `response`: the
  envelope into the outbox (`store.outbox.enqueue`), then `transport.outbox.wake`;

It sends `app.action.state` {`id`, `state: rejected`, `code`, `detail`} to `app.<scope>`,
the app's process (its mailbox is its App Inbox), for an action it refuses; the store sends
that process `app.deliver` {`messages`: [projection]} and the AppServer's verdicts on its
actions (`app.action.state`).
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
