"""The store actor: `runtime.db`, the runtime's own facts.

`_schema` creates the tables (sqlite-utils) and opens the connection; `_actor` holds the
handlers. Messages it answers (all bodies are msgpack maps; "call" means it replies); who may send
each, and its body's type, is in `door`:

| type | kind | body → reply |
|---|---|---|
| `store.inbound.persist` | cast | items, rejections, outbox, cursor, `deliver` (see below) |
| `store.cursor.get` | call | → `cursor` (highest AppServer seq durably stored) |
| `store.conversations` | call | → `conversations` {id: agent} |
| `store.outbox.enqueue` | call | `items` [{key, envelope, origin, conversation_id}] → `orders` |
| `store.outbox.pending` | call | `after`, `limit` → `items` [{order, key, envelope}] |
| `store.outbox.settle` | cast | `key`, `status`, `seq`/`code`/`detail`; then `app.action.state` |
| `store.audit` | cast | `code`, `detail`, `message_id`?, `seq`? |
| `store.lifecycle.set` | cast | `state`, `detail` (the connection lifecycle, from the transport) |
| `store.apps.load` | call | → `records`, `operations`, `instances`, `settings` |
| `store.apps.write` | call | whole rows of one app-manager step, in one transaction → `written` |
| `store.diagnostics.report` | cast | an app's own `health` {status, detail}?, `events`? |
| `store.session_data.get` | call | an app's: `instance_id`? → `instance_id`, `data`, `revision` |
| `store.session_data.replace` | call | an app's: `instance_id`?, `data`, `expected_revision` → |
| | | `instance_id`, `revision` |
| `store.artifacts.create` | call | an app's: `data`, `media_type`, `title`, `conversation_id`? → |
| | | the reference {`artifact_id`, `title`, `media_type`, `size`} |
| `store.artifacts.read` | call | `artifact_id` → `artifact` (its row), `data` (its own app, chat) |
| `store.artifacts.list` | call | an app's: `after`? → `artifacts` (a page of its own), `next` |
| `store.artifacts.meta` | call | `artifact_id` → `artifact` (its row, or null) |
| `store.app_data.overview` | call | the settings app's: → `apps` (each app's session data, |
| | | artifacts, diagnostics: counts and sizes), `retention` |

With `deliver` (the router's way) the store does what follows the commit itself: each
app's fresh messages (`app.deliver`), duplicates back to the router
(`router.inbound.duplicates`), the agent's tool calls and newly associated conversations to
the tool router (`tool_router.inbound`), `transport.outbox.wake`, `transport.persisted
{cursor}`.

A committed session-data replace is announced to the app's process after the commit
(`app.session_data.changed` {`instance_id`, `data`, `revision`}); `_session_data` has the rules.

`read_lifecycle`, `read_outbox`, `read_session_data` and the others read the file directly
(read-only), for the CLI; `RuntimeReader` keeps it
open for a reader that reads the registry and the lifecycle again and again (the web host).

**Why the store delivers.** The router casts `store.inbound.persist` and goes on with the
next run of the stream; after its commit the store itself sends `app.deliver` (the fresh
items, per app in stream order, cut at 512 KiB, under the 1 MiB frame),
`transport.outbox.wake` if the run queued rejection envelopes, and `transport.persisted`.
A `call` whose reply the router turned into those casts would cost one more hop and one
more mailbox commit (the reply) on every message's way to the app, and a router waiting
idle for the store on every run (live p50 0.5-1 ms more, `lineup bench e2e`). The app still
receives only what the store's commit says is fresh, the cursor still moves only after
that commit, and the store's casts derive their ids from the request's and follow its
recorded reply, so a replayed request sends the same messages and the mailbox keeps each
once. FIFO from router to store keeps runs in order, and a router restarting asks the store
for its floor behind its own earlier requests. The backlog reaches apps in stream order as
it is persisted, before anything live (a live message has a higher seq).

**Replays decide nothing new.** Every mutating request is applied with `applied_once` on
its kernel id and its reply is stored in the same transaction (`requests`, `_actor`): a
redelivered request gets the first reply. Calls to the store are retried with the same id
after a timeout (the switchboard re-sends the stored reply).

**Dedup.** By envelope id: an id seen again under another seq is `duplicate`, audited, and
handed back to the router to be answered; the same id and seq again is a redelivery and is
dropped silently. Rejections below the router's floor (the cursor at its start) were
audited when first seen and are not audited again.

**Rejections** are audited with their `Code`; an agent's rejected message is answered
through the outbox: `lineup.tool.error {code}` for a tool call, otherwise a runtime
`lineup.message` replying to it whose text starts with the code. Its id derives from the
rejected message's, so it is queued once.

`store.artifacts.keep` (a call, from the capability gateway only) keeps an artifact a
provider made for an app, or a file the user chose for it (`_artifacts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors.kernel import lazy_exports

# Each name loads on first use: the command line's reads import neither trio nor the
# contracts, and `lineup app install` starts as fast as Python does.
_LAZY = {
    "DB_FILE": "._file",
    "RuntimeReader": "._reads",
    "SessionDataLimits": "._session_data",
    "StoreActor": "._actor",
    "is_artifact_id": "._artifacts",
    "open_db": "._schema",
    "read_apps": "._reads",
    "read_artifact": "._reads",
    "read_artifact_data": "._reads",
    "read_artifacts": "._reads",
    "read_audit": "._reads",
    "read_diagnostics": "._reads",
    "read_lifecycle": "._reads",
    "read_operation": "._reads",
    "read_outbox": "._reads",
    "read_outbox_envelopes": "._reads",
    "read_session_data": "._reads",
}

if TYPE_CHECKING:
    from ._actor import StoreActor
    from ._artifacts import is_artifact_id
    from ._file import DB_FILE
    from ._reads import (
        RuntimeReader,
        read_apps,
        read_artifact,
        read_artifact_data,
        read_artifacts,
        read_audit,
        read_diagnostics,
        read_lifecycle,
        read_operation,
        read_outbox,
        read_outbox_envelopes,
        read_session_data,
    )
    from ._schema import open_db
    from ._session_data import SessionDataLimits


__getattr__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "DB_FILE",
    "RuntimeReader",
    "SessionDataLimits",
    "StoreActor",
    "is_artifact_id",
    "open_db",
    "read_apps",
    "read_artifact",
    "read_artifact_data",
    "read_artifacts",
    "read_audit",
    "read_diagnostics",
    "read_lifecycle",
    "read_operation",
    "read_outbox",
    "read_outbox_envelopes",
    "read_session_data",
]
