"""How durable the supervisor's mailbox commits are: SQLite's `synchronous` levels, and the
runtime's default, apart so that a command's options can name it without loading the kernel."""

from __future__ import annotations

from typing import Final, Literal

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

# A commit is not synced; the switchboard syncs the WAL (one fsync for every commit since
# the last) before anything of a batch leaves the device or tells the user it is done,
# which is all the durability contract asks (docs/architecture.md, "Durability: what a
# power cut may take"). FULL syncs every commit.
RUNTIME_SYNCHRONOUS: Final[Synchronous] = "NORMAL"
