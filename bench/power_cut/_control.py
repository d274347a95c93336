"""The lines between a `PowerCutDisk` and its server process: one JSON object a line, on
the server's standard input (commands) and output (events).

Commands: while mounted, `{"cut": SEED}` (SEED an integer, or null to drop everything) and
`{"unmount": null}`; after a cut, `{"mount": null}`. Events: `{"mounted": null}`, `{"cut":
REPORT}` (a `CutReport`'s fields), `{"unmounted": null}`, `{"failed": SENTENCE}`. A closed
standard input unmounts, after making everything durable (a disk whose owner died keeps its
data), and ends the server.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

Command = Literal["mount", "cut", "unmount"]
Event = Literal["mounted", "cut", "unmounted", "failed"]


@dataclass(frozen=True)
class CutReport:
    """What one cut took and kept. `changes_*` count the writes and truncates of files,
    `names_*` the creates, links, renames and removals; a torn write is counted as
    dropped, with a 4 KiB-aligned prefix of it kept."""

    seed: int | None
    files: int  # files that had unsynced writes or truncates
    changes_kept: int
    changes_dropped: int
    writes_torn: int
    names_kept: int
    names_undone: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> CutReport:
        return cls(**fields)


def line(kind: Command | Event, value: Any) -> bytes:
    return json.dumps({kind: value}).encode() + b"\n"


def parse(raw: bytes) -> tuple[str, Any]:
    """The one (kind, value) pair of a line; ValueError for anything else."""
    message = json.loads(raw)
    if not isinstance(message, dict) or len(message) != 1:
        raise ValueError(f"not a power-cut control line: {raw[:200]!r}")
    [(kind, value)] = message.items()
    return kind, value
