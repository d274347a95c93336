"""What the AppServer counts of its connections, frames and verdicts, for its statistics
(its sessions and its faults add to them)."""

from __future__ import annotations

from dataclasses import dataclass

from contracts import SubmitResult


@dataclass(slots=True)
class ServerCounters:
    connections: int = 0
    connections_dropped: int = 0
    frames_sent: int = 0
    frames_received: int = 0
    frames_duplicated: int = 0
    heartbeat_timeouts: int = 0
    pings_sent: int = 0
    unauthorized: int = 0
    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0

    def count_verdict(self, result: SubmitResult) -> None:
        if result.duplicate:
            self.duplicates += 1
        elif result.status == "accepted":
            self.accepted += 1
        else:
            self.rejected += 1
