"""How durable the supervisor's mailbox commits are: SQLite's `synchronous` levels, and the
runtime's default, apart so that a command's options can name it without loading the kernel.

`mailbox.db` is one SQLite file in WAL mode at `synchronous=NORMAL` by default
(`--synchronous`, `RuntimeConfig.synchronous`). A commit is not synced, so a crash of any
process loses nothing, but a power cut may take the last commits. The switchboard syncs the
WAL (`MailboxStore.sync_wal`, one fsync for every commit since the last) before a batch's
answers to the UI and control sockets (the page's `stored`, an operator's send) and before
its deliveries to an actor whose spec says it `reaches_outside` (the transport, the host,
the web host, the capability gateway: the AppServer, the user's screens, files and
desktop). So a power cut takes only what nobody outside was told of, which the actors
derive again on replay under the same ids. At `FULL` every commit is synced besides: an ack
between actors means on disk.

`runtime.db` and the apps' `app.db` stay at `FULL` either way; the tool router's
`tool_router.db` follows the mailbox's setting, with the same barrier before its envelopes
leave for the transport. The contract this serves is docs/architecture.md, "Durability:
what a power cut may take".
"""

from __future__ import annotations

import errno
import sqlite3
from typing import Final, Literal

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

# A commit is not synced; the switchboard syncs the WAL (one fsync for every commit since
# the last) before anything of a batch leaves the device or tells the user it is done,
# which is all the durability contract asks (the module's docstring). FULL syncs every
# commit.
RUNTIME_SYNCHRONOUS: Final[Synchronous] = "NORMAL"


def is_disk_full_error(error: BaseException | None) -> bool:
    """Whether `error`, or an error it was raised from, is a write that failed for want of
    space (a file or SQLite)."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(error, sqlite3.OperationalError) and (
            getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
        ):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False
