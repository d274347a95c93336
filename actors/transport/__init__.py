"""The transport actor: the AppServer link.

`_actor` runs the link, with the token `actors.runtime_token` reads (from the user's keyring
or the data dir's 0600 file); `_lifecycle` maps link states to the runtime lifecycle.
Messages:

| type | from | body | effect |
|---|---|---|---|
| `transport.persisted` | store | `cursor` | ack it to the AppServer; frees the window |
| `transport.outbox.wake` | router, store | `{}` | read newly queued outbox items and submit them |
| `transport.submit` | tool_router | `items` [{`key`, `envelope`, …}] | submit; ack at verdicts |

It sends `router.inbound` {`items`: [[seq, JSON text]]} (each message's text exactly as
the AppServer sent it: the link reads stream frames with `raw_messages`),
`store.outbox.settle` {`key`, `status`, `seq` / `code` / `detail`} and
`store.lifecycle.set` {`state`, `detail`}, `store.audit` (a refused tool router envelope), and
calls `store.cursor.get` and `store.outbox.pending`.
"""

from ._actor import TransportActor
from ._lifecycle import Lifecycle, lifecycle_of

__all__ = ["Lifecycle", "TransportActor", "lifecycle_of"]
