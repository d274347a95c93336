"""The store actor: `runtime.db`, the runtime's own facts.

`_schema` creates the tables (sqlite-utils) and opens the connection; `_actor` holds the
handlers. What it takes, from whom and in what shape is its `door` (`lineup protocol messages
--to store`); the router's run (`store.inbound.persist`) is answered with its duplicates
and the cursor, and the store sends nothing on for it: the router delivers.

A committed session-data replace is announced to the app's process after the commit
(`app.session_data.changed` {`instance_id`, `data`, `revision`}); `_session_data` has the rules.

`read_lifecycle`, `read_outbox`, `read_session_data` and the others read the file directly
(read-only), for the CLI; `RuntimeReader` keeps it open for a reader that reads the
lifecycle again and again (the web host). The app registry is the app manager's own file
(`actors.app_manager.registry`), which the store reads read-only where it judges an app's
request by it (`_apps`).

**Replays decide nothing new.** Every mutating request is applied with `applied_once` on
its kernel id and its reply is stored in the same transaction (`requests`, `_actor`): a
redelivered request gets the first reply. Calls to the store are retried with the same id
after a timeout (the switchboard re-sends the stored reply).

**Dedup.** By envelope id: an id seen again under another seq is `duplicate`, audited, and
named in the answer for the router to answer; the same id and seq again is a redelivery and is
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
    "read_artifact": "._reads",
    "read_artifact_data": "._reads",
    "read_artifacts": "._reads",
    "read_audit": "._reads",
    "read_diagnostics": "._reads",
    "read_lifecycle": "._reads",
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
        read_artifact,
        read_artifact_data,
        read_artifacts,
        read_audit,
        read_diagnostics,
        read_lifecycle,
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
    "read_artifact",
    "read_artifact_data",
    "read_artifacts",
    "read_audit",
    "read_diagnostics",
    "read_lifecycle",
    "read_outbox",
    "read_outbox_envelopes",
    "read_session_data",
]
