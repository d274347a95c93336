"""The soak's samples: every `EVERY_S` the data dir's size by part, the user data in it
(the conversation's messages and the artifacts), and each process's RSS; and the rates
fitted to them after the warm-up."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from lineup.data_dir_usage import part_sizes, table_sizes

EVERY_S = 10.0
MIB = 1 << 20


def user_data_bytes(data_dir: Path) -> int:
    """What the workload added that is the user's: the conversation's messages (their
    envelopes) and the artifacts' bytes."""
    total = 0
    with contextlib.suppress(sqlite3.Error):
        uri = f"file:{data_dir / 'runtime.db'}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
            row = db.execute(
                "SELECT (SELECT coalesce(sum(length(envelope)), 0) FROM messages),"
                " (SELECT coalesce(sum(size), 0) FROM artifacts)"
            ).fetchone()
            total = int(row[0]) + int(row[1])
    return total


# The tables that hold what is the user's, as the runtime keeps it: the conversation (its
# messages, what was sent), the artifacts' records, and each app's log of the conversation.
USER_TABLES: Final = {"runtime.db": ("messages", "outbox", "artifacts"), "app.db": ("events",)}


def kept_user_data_bytes(data_dir: Path, artifacts_bytes: int) -> int | None:
    """The user's data as it is kept: the bytes of `USER_TABLES` with their indexes, and
    the artifacts' files (`artifacts_bytes`, as the sample's parts measured them); None
    where SQLite cannot measure a table (no `dbstat`)."""
    total = artifacts_bytes
    files = [data_dir / "runtime.db", *sorted(data_dir.glob("apps/*/app.db"))]
    for path in files:
        if not path.exists():
            continue
        try:
            tables = table_sizes(path)
        except sqlite3.Error:
            continue  # an app's log being created: measured at the next sample
        for row in tables:
            if row["table"] in USER_TABLES[path.name]:
                if row["bytes"] is None:
                    return None
                total += row["bytes"]
    return total


def rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def process_label(pid: int, supervisor: int) -> str:
    """A process of the runtime that is no actor, by its parent: the zygote is the
    supervisor's child; an app zygote or a launcher is a child of another."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return f"process {pid}"
    parent = int(fields[1])
    return "zygote" if parent == supervisor else f"helper of {parent}"


@dataclass
class Sampler:
    """Samples until `minutes` are up: (seconds since the start, parts, user data, RSS)."""

    data_dir: Path
    minutes: float
    processes: Callable[[], dict[str, int]]  # name -> pid, the runtime's live processes
    samples: list[dict[str, Any]] = field(default_factory=list)

    def take(self, at_s: float) -> None:
        rss = {}
        for name, pid in self.processes().items():
            size = rss_bytes(pid)
            if size is not None:
                rss[name] = size
        parts = part_sizes(self.data_dir)
        self.samples.append(
            {
                "at_s": round(at_s, 1),
                "parts": parts,
                "user_data": user_data_bytes(self.data_dir),
                "kept_user_data": kept_user_data_bytes(self.data_dir, parts["artifacts"]),
                "rss": rss,
            }
        )

    async def run(self) -> None:
        start = trio.current_time()
        ends = start + self.minutes * 60
        while True:
            now = trio.current_time()
            await trio.to_thread.run_sync(self.take, now - start)
            if now >= ends:
                return
            await trio.sleep_until(min(ends, now + EVERY_S))


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope of (seconds, value) points, per hour; None for fewer than
    two points."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return None
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread * 3600


def _mib(value: float | None) -> float | None:
    return None if value is None else round(value / MIB, 2)


def warmup_s(minutes: float) -> float:
    """Ten minutes, or the first quarter of a shorter run."""
    return min(600.0, minutes * 60 / 4)


def soak_figures(samples: list[dict[str, Any]], minutes: float) -> dict[str, Any]:
    """The soak's keys from its samples."""
    if not samples:
        return {}
    warm = [s for s in samples if s["at_s"] >= warmup_s(minutes)] or samples[-1:]
    first, last = samples[0], samples[-1]

    def total(sample: dict[str, Any]) -> int:
        return sum(sample["parts"].values())

    # A process that came and went (a launcher's helper) has no rate of its own: only
    # those in the last sample and most of the warm ones are rated.
    names = sorted(
        name for name in last["rss"] if 2 * sum(name in s["rss"] for s in warm) > len(warm)
    )
    kept = [s for s in warm if s.get("kept_user_data") is not None]
    return {
        "warmup_s": warmup_s(minutes),
        "samples": len(samples),
        "data_dir_mib_start": _mib(total(first)),
        "data_dir_mib_end": _mib(total(last)),
        "growth_mib_per_hour_after_warmup": _mib(
            slope_per_hour([(s["at_s"], total(s)) for s in warm])
        ),
        "user_data_mib_per_hour_after_warmup": _mib(
            slope_per_hour([(s["at_s"], s["user_data"]) for s in warm])
        ),
        "user_data_mib_end": _mib(last["user_data"]),
        # The same as the runtime keeps it, and the rest of the data dir: what must level off.
        "kept_user_data_mib_per_hour_after_warmup": _mib(
            slope_per_hour([(s["at_s"], s["kept_user_data"]) for s in kept])
        ),
        "kept_user_data_mib_end": _mib(last.get("kept_user_data")),
        "rest_mib_per_hour_after_warmup": _mib(
            slope_per_hour([(s["at_s"], total(s) - s["kept_user_data"]) for s in kept])
        ),
        "parts_mib_end": {k: _mib(v) for k, v in last["parts"].items()},
        "parts_growth_mib_per_hour_after_warmup": {
            part: _mib(slope_per_hour([(s["at_s"], s["parts"][part]) for s in warm]))
            for part in last["parts"]
        },
        "rss_mib_end": {name: _mib(last["rss"].get(name)) for name in names},
        "rss_growth_mib_per_hour": {
            name: _mib(
                slope_per_hour([(s["at_s"], s["rss"][name]) for s in warm if name in s["rss"]])
            )
            for name in names
        },
    }
