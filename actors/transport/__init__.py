"""The transport actor: the AppServer link.

`_actor` runs the link; `_lifecycle` maps link states to the runtime lifecycle; `_token`
keeps and reads the runtime's token, in the user's keyring (`_keyring`) or its 0600 file.
Messages:

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
from ._token import (
    TOKEN_FILE,
    TokenError,
    TokenHome,
    keep_token,
    load_token,
    read_token,
    token_home,
    write_token,
)

__all__ = [
    "TOKEN_FILE",
    "Lifecycle",
    "TokenError",
    "TokenHome",
    "TransportActor",
    "keep_token",
    "lifecycle_of",
    "load_token",
    "read_token",
    "token_home",
    "write_token",
]
