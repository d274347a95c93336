"""The transport actor: the AppServer link.

`_actor` runs the link; `_lifecycle` maps link states to the runtime lifecycle; `_token`
reads the runtime's token file. Messages:

| type | from | body | effect |
|---|---|---|---|
| `transport.persisted` | store | `cursor` | ack it to the AppServer; frees the window |
| `transport.outbox.wake` | router, store | `{}` | read newly queued outbox items and submit them |

It sends `router.inbound` {`items`: [[seq, JSON text]]} (each message's text exactly as
the AppServer sent it: the link reads stream frames with `raw_messages`),
`store.outbox.settle` {`key`, `status`, `seq` / `code` / `detail`} and
`store.lifecycle.set` {`state`, `detail`}, and calls `store.cursor.get` and `store.outbox.pending`.
"""

from ._actor import TransportActor
from ._lifecycle import Lifecycle, lifecycle_of
from ._token import TOKEN_FILE, TokenError, read_token, write_token

__all__ = [
    "TOKEN_FILE",
    "Lifecycle",
    "TokenError",
    "TransportActor",
    "lifecycle_of",
    "read_token",
    "write_token",
]
