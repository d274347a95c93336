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
