"""What the data dir holds, part by part, beside each part's bound and rule.

Read-only and without the runtime: folders are walked, databases opened `mode=ro` and
measured with SQLite's `dbstat` table (bytes per table and index), or, where SQLite was
built without it, by their pages and each table's rows. Used by `lineup debug usage`,
`lineup debug status` (the share of the file system) and `lineup bench soak`.

A runtime runs for weeks between restarts: every file and table that grows with use has a
rule and a bound, and `lineup debug usage` shows each one's size beside them. Upkeep runs
when it is due by what was written (never by a poll: an idle runtime stays idle), in small
batches, each its own short transaction. What grows:

- `mailbox.db` done messages (`messages`, `replies`): kept for the dedup window, and only
  those among the newest `dedup_max_rows` seqs (24 h, 20,000 seqs), and every one younger
  than a message handed out and not acked (up to four caps back); pending, in-flight and
  dead rows are never pruned. At the cap the oldest done rows go even inside the window,
  with a warning (`actors/kernel/supervising/_mailbox.py`).
- `mailbox.db-wal`: copied back in the background past about 8 MB, cut to 4 MiB each time
  it starts over, and to nothing after 30 s without a batch.
- `runtime.db` request records (`requests`, `lineup_applied`): the newest 10,000, for a
  request a sender sends again from its own records (the mailbox drops a replayed
  handler's copies); the oldest go, 500 a transaction, every 2,000 requests
  (`actors/store/_upkeep.py`).
- `runtime.db` audit: the newest 20,000 rows, none older than 90 days, pruned with the
  request records; a person's routine action (an action in an app's UI, a host intent)
  repeated within a minute is counted on the row that records it.
- `runtime.db-wal`: SQLite's checkpoints; after 30 s without a request, cut to nothing.
- `runtime.db` conversation (`messages`, `conversations`, and the `outbox` of what the user
  and the apps sent with its outcome): the user's, never pruned; its size is shown.
- `runtime.db` app diagnostics, session-data answers, finished capability requests,
  finished app operations, lifecycle: the newest per app or by age (100 events an app, 256
  answers an app, 7 days), the oldest going as new ones are written.
- `tool_router.db` calls and their deadline operations: a finished call for a week after
  its last change, among the newest 500 finished (`lineup tools calls` shows it, a call
  retried with its id gets the same outcome), pruned with the steps' minute prune.
- `app_manager.db` operations and instances: the running operations and the newest 100
  finished (the oldest going once 25 more finished), the live instances and the newest
  100 that ended (closed or failed), the oldest going as the app manager writes.
- `tool_router.db` steps (`tool_steps`, `lineup_applied`): what each step emitted, for a
  replay of its cause: 2 minutes in a running incarnation, and what came before its first
  delivery at start; pruned about once a minute inside a step's transaction.
- `apps/<scope>/app.db` (an app's event log): the messages it was delivered (the chat app:
  every one) and its actions, with no bound: it grows with the conversation it mirrors (in
  the soak, about as fast as `runtime.db`'s messages); its delivery ids (`lineup_applied`)
  the newest 10,000, far more than the kernel keeps in flight to it; its finished tool
  calls the newest 200, a day at most, pruned as the app starts and every 50 finished;
  its WAL about 1 MiB.
- `logs/NAME.log`: an actor's log is turned over past 4 MiB to `NAME.log.1` (one older
  copy), an app's by the supervisor as it copies it (`log_max`); a log untouched for 30
  days (a removed app's) goes; checked with the mailbox's prune
  (`actors/kernel/supervising/_log_bound.py`).
- `notifications.jsonl`: the newest 100, the oldest dropped at each write.
- `bundles/`: the installed and the previous version of each app, a removed app's going
  with it (`actors/app_manager/_cache.py`).
- `artifacts/` and session data: quotas per app (`ArtifactLimits`, `SessionDataLimits`:
  `actors/store/_artifacts.py`, `actors/store/_session_data.py`), past which
  `quota_exceeded` or `too_large`."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final


@dataclass(frozen=True)
class Part:
    name: str
    patterns: tuple[str, ...]  # globs under the data dir
    bound: str
    rule: str


# Every part of the data dir that grows with use; "other" is the rest.
PARTS: Final = (
    Part(
        "mailbox",
        ("mailbox.db", "mailbox.db-wal", "mailbox.db-shm"),
        "done messages among the newest 20,000 seqs, for 24 h; WAL 4 MiB",
        "pruned at start, as messages come and hourly; WAL cut to nothing when idle",
    ),
    Part(
        "runtime_db",
        ("runtime.db", "runtime.db-wal", "runtime.db-shm"),
        "records and audit bounded; the conversation is the user's",
        "see its tables",
    ),
    Part(
        "app_manager_db",
        ("app_manager.db", "app_manager.db-wal", "app_manager.db-shm"),
        "the apps; 100 ended instances, 100 finished operations; WAL 1 MiB",
        "see its tables",
    ),
    Part(
        "tool_router_db",
        ("tool_router.db", "tool_router.db-wal", "tool_router.db-shm"),
        "500 finished calls, a week at most; 2 minutes of steps; WAL 1 MiB",
        "see its tables",
    ),
    Part(
        "capability_gateway_db",
        ("capability_gateway.db", "capability_gateway.db-wal", "capability_gateway.db-shm"),
        "a week of finished requests; the grants",
        "see its tables",
    ),
    Part("logs", ("logs/*",), "4 MiB a log and one older copy", "turned over; gone after 30 days"),
    Part("bundles", ("bundles/*",), "2 versions an app", "the installed and the previous"),
    Part("artifacts", ("artifacts/*",), "per-app quotas", "the user's: kept"),
    Part("apps", ("apps/*",), "each app's own", "removed with its app"),
    Part("appserver", ("appserver/*",), "the embedded AppServer's", "its own"),
    Part("downloads", ("downloads/*",), "the user's", "kept"),
    Part("notifications", ("notifications.jsonl",), "100 notifications", "the oldest dropped"),
)
OTHER: Final = Part("other", (), "small files", "")

# Tables of the databases that grow, with their bound and rule.
TABLE_BOUNDS: Final[dict[str, tuple[str, str]]] = {
    "mailbox.db/messages": ("20,000 seqs, 24 h", "done rows pruned; live and dead kept"),
    "mailbox.db/replies": ("with their messages", "pruned with them"),
    "runtime.db/messages": ("none", "the conversation: the user's, kept"),
    "runtime.db/outbox": ("none", "what was sent, with its outcome: kept"),
    "runtime.db/requests": ("10,000", "the newest kept"),
    "runtime.db/lineup_applied": ("10,000", "with the request records"),
    "runtime.db/audit": ("20,000 rows, 90 days", "the newest kept; repeats counted"),
    "runtime.db/app_diagnostic_events": ("100 an app", "the newest kept"),
    "runtime.db/app_session_requests": ("256 an app", "the newest kept"),
    "app_manager.db/app_operations": ("100 finished", "the newest kept"),
    "runtime.db/artifacts": ("per-app quotas", "the user's: kept"),
    "runtime.db/app_session_data": ("128 KiB an instance", "replaced whole"),
    "tool_router.db/tool_calls": ("500 finished, 7 days", "older ones go"),
    "tool_router.db/tool_deadlines": ("with their calls", "go with them"),
    "tool_router.db/tool_steps": ("2 minutes", "older steps go, each minute"),
    "tool_router.db/lineup_applied": ("with the steps", "go with them"),
    "app_manager.db/app_instances": ("live ones and 100 ended", "the oldest ended go"),
    "capability_gateway.db/capability_requests": ("7 days once finished", "older ones go"),
    "capability_gateway.db/capability_grants": ("one an app and capability", "the user's"),
    "capability_gateway.db/audit_outbox": ("until the store has them", "sent, then gone"),
}
DATABASES: Final = (
    "mailbox.db",
    "runtime.db",
    "app_manager.db",
    "tool_router.db",
    "capability_gateway.db",
)


def _size(path: Path) -> int:
    """Bytes on disk of a file, or of everything under a folder."""
    try:
        if path.is_symlink() or not path.is_dir():
            return path.lstat().st_size
    except FileNotFoundError:
        return 0
    total = 0
    for root, dirs, files in os.walk(path):
        for name in files + dirs:
            with contextlib.suppress(FileNotFoundError):
                total += (Path(root) / name).lstat().st_size
    return total


def part_sizes(data_dir: Path) -> dict[str, int]:
    """Bytes of each part of the data dir, "other" for the rest."""
    sizes: dict[str, int] = {}
    claimed: set[Path] = set()
    for part in PARTS:
        paths = {p for pattern in part.patterns for p in data_dir.glob(pattern)}
        claimed |= paths | {p.parent for p in paths if p.parent != data_dir}
        sizes[part.name] = sum(_size(p) for p in paths)
    other = 0
    if data_dir.is_dir():
        for entry in data_dir.iterdir():
            if entry not in claimed:
                other += _size(entry)
    sizes[OTHER.name] = other
    return sizes


def table_sizes(path: Path) -> list[dict[str, Any]]:
    """Each table of the database at `path` (its indexes counted with it): bytes and rows,
    read-only. Without `dbstat`, bytes are None and only rows are given."""
    uri = f"file:{path}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
        owners = dict(
            db.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')")
        )
        tables = [
            str(name)
            for (name,) in db.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        sizes: dict[str, int] | None = None
        with contextlib.suppress(sqlite3.OperationalError):  # SQLite built without dbstat
            pages = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
            sizes = {}
            for name, size in pages:
                table = str(owners.get(name, name))
                sizes[table] = sizes.get(table, 0) + int(size)
        rows = []
        for table in tables:
            count = int(db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
            bound, rule = TABLE_BOUNDS.get(f"{path.name}/{table}", ("", ""))
            rows.append(
                {
                    "table": table,
                    "bytes": None if sizes is None else sizes.get(table, 0),
                    "rows": count,
                    "bound": bound,
                    "rule": rule,
                }
            )
    return rows


def file_system(data_dir: Path) -> dict[str, int]:
    stat = os.statvfs(data_dir)
    return {"size": stat.f_blocks * stat.f_frsize, "free": stat.f_bavail * stat.f_frsize}


def usage(data_dir: Path) -> dict[str, Any]:
    """Everything `lineup debug usage --json` prints."""
    sizes = part_sizes(data_dir)
    databases = []
    for name in DATABASES:
        path = data_dir / name
        if path.exists():
            databases.append(
                {
                    "file": name,
                    "bytes": sum(_size(data_dir / f"{name}{s}") for s in ("", "-wal", "-shm")),
                    "tables": table_sizes(path),
                }
            )
    return {
        "data_dir": str(data_dir),
        "bytes": sum(sizes.values()),
        "file_system": file_system(data_dir),
        "parts": [
            {"part": p.name, "bytes": sizes[p.name], "bound": p.bound, "rule": p.rule}
            for p in (*PARTS, OTHER)
        ],
        "databases": databases,
    }


# `lineup debug status` warns past this share of the data dir's file system.
DATA_DIR_SHARE_WARNED: Final = 0.5


def share_warning(data_dir: Path) -> str | None:
    """One sentence when the data dir takes more than `DATA_DIR_SHARE_WARNED` of its file
    system, else None."""
    fs = file_system(data_dir)
    if not fs["size"] or (fs["size"] - fs["free"]) / fs["size"] <= DATA_DIR_SHARE_WARNED:
        return None  # the whole disk is not that full: no need to walk the data dir
    used = sum(part_sizes(data_dir).values())
    share = used / fs["size"]
    if share <= DATA_DIR_SHARE_WARNED:
        return None
    return (
        f"the data dir takes {share:.0%} of its disk ({used / 2**20:,.0f} MiB):"
        " see what grows with `lineup debug usage`, and remove apps or saved files you"
        " no longer need, or move the data dir to a larger disk"
    )


def human_bytes(size: int | None) -> str:
    if size is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size} bytes"
