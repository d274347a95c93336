"""The runtime's connection lifecycle, as the transport sees its link.

created → restoring → authenticating → synchronizing → online ↘ reconnecting /
offline_degraded → stopping → stopped. `created`, `stopping` and `stopped` belong to the
supervisor; the transport reports the rest to the store (`store.lifecycle.set`), where
`lineup debug status` reads them.
"""

from __future__ import annotations

from typing import Final

from contracts import RuntimeState

# The contracts' runtime states are the one list of them.
Lifecycle = RuntimeState

# Failed connection attempts in a row after which the runtime says it is offline (still
# usable: user messages wait in the outbox, docs/protocol.md §4.7).
OFFLINE_AFTER: Final = 3


def lifecycle_of(link_state: str, *, was_online: bool, failures: int) -> Lifecycle:
    """The lifecycle state for a link state (`link.Link.state`)."""
    if link_state == "failed":
        return "offline_degraded"
    if link_state == "live":
        return "online"
    if link_state == "syncing":
        return "synchronizing"
    if failures >= OFFLINE_AFTER:
        return "offline_degraded"
    if was_online:
        return "reconnecting"
    return "authenticating"
