"""What the supervisor checks of its data dir before it writes anything there, so that a
data dir it cannot use stops the start with one sentence instead of a crash later on.

- `check_data_dir`, before the lock: the data dir exists (made if not), belongs to the user
  running the runtime, takes writes, and its sockets' paths fit a Unix socket address.
- `check_databases`, under the lock (no other runtime has the files open): each database
  of the runtime is a readable SQLite file of its own kind. A damaged one is moved aside
  with its WAL, never rewritten or deleted, and the start is refused: starting over
  without what the file held is the user's decision, as is restoring a backup.

The data dir must be the running user's own (root refuses another user's: the runtime
seals its data dir and keeps its apps' uids, token and sockets there). Under
`supervisor.lock`, `mailbox.db`, `runtime.db` and `tool_router.db` are checked through
their WAL with `PRAGMA quick_check`: a damaged one is kept aside whole, with its WAL, as
`NAME.corrupt-<UTC time>` (never overwritten), and the start is refused; starting again
begins without it. A SQLite file of something else is left in place and refused. A
`control.sock` left by a killed runtime is replaced; a live runtime holds the lock and is
named by its pid. Each refusal is one sentence with what to do, and a non-zero exit.
"""

from __future__ import annotations

import errno
import os
import pwd
import sqlite3
import time
from pathlib import Path
from typing import Final

from .._client import CONTROL_SOCKET, UI_SOCKET

# A Unix socket's address holds at most 107 bytes of path (108 with the final NUL).
SOCKET_PATH_MAX: Final = 107

# The runtime's databases at the top of its data dir, each with a table and a column that
# only a database of its kind has: a SQLite file of something else dropped in its place is
# left alone, not filled with our tables.
DATABASES: Final = {
    "mailbox.db": ("messages", "recipient"),
    "runtime.db": ("conversations", "conversation_id"),
    "tool_router.db": ("tool_calls", "call_id"),
}

# SQLite's primary result codes for a file that is damaged or not a database at all; any
# other failure (locked, unreadable) says nothing about the file's contents.
_SQLITE_CORRUPT: Final = 11
_SQLITE_NOTADB: Final = 26

# What keeps a database's latest writes (the WAL) and its readers' index beside it.
_COMPANIONS: Final = ("-wal", "-shm")

_NOT_WRITABLE: Final = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


class DataDirUnusable(RuntimeError):
    """The data dir cannot be used as it is; the message names the problem and what to do."""


def check_data_dir(data_dir: Path) -> None:
    """Refuse a data dir the runtime could not use; make it when it does not exist yet."""
    _check_socket_paths(data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise DataDirUnusable(
            f"{data_dir} is a file, not a directory; pass --data-dir with a directory"
        ) from None
    except OSError as exc:
        raise DataDirUnusable(
            f"cannot create {data_dir} ({exc.strerror}); pass --data-dir with a directory "
            "you can write to"
        ) from None
    _check_owner(data_dir)
    _check_writable(data_dir)


def _check_socket_paths(data_dir: Path) -> None:
    longest = max(CONTROL_SOCKET, UI_SOCKET, key=len)
    if len(os.fsencode(data_dir / longest)) > SOCKET_PATH_MAX:
        raise DataDirUnusable(
            f"{data_dir} is too long a path for the runtime's sockets (a Unix socket's path "
            f"has at most {SOCKET_PATH_MAX} bytes); pass a shorter --data-dir"
        )


def _check_owner(data_dir: Path) -> None:
    """The data dir is the runtime user's own. The runtime seals it to its owner (mode
    0700) and keeps there what decides who apps run as (`app_ids.json`), its token and its
    sockets: a data dir another user owns is one that user can rewrite under it, and root
    running there would hand that user its apps' uids and its AppServer token."""
    owner = data_dir.stat().st_uid
    me = os.geteuid()
    if owner != me:
        raise DataDirUnusable(
            f"{data_dir} belongs to {_user(owner)}, not to {_user(me)} who runs the runtime; "
            f"run it as {_user(owner)}, or pass --data-dir with a directory of your own"
        )


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _check_writable(data_dir: Path) -> None:
    """Write and remove a file: the only test that holds for root, whom no mode stops but a
    read-only mount or an immutable directory does."""
    probe = data_dir / f".write-check-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise DataDirUnusable(
                f"the file system of {data_dir} is full; free some space there and start again"
            ) from None
        if exc.errno in _NOT_WRITABLE:
            raise DataDirUnusable(
                f"{data_dir} is read-only ({exc.strerror}); make it writable, or pass "
                "--data-dir with a directory you can write to"
            ) from None
        raise DataDirUnusable(
            f"cannot write in {data_dir} ({exc.strerror}); fix that, or pass another --data-dir"
        ) from None


def check_databases(data_dir: Path) -> None:
    """Each of the runtime's databases that exists is sound and of its kind; the damaged
    ones are moved aside and the start refused, naming where each went."""
    moved: list[str] = []
    for name, mark in DATABASES.items():
        path = data_dir / name
        if not path.exists():
            continue
        beside = _companions(path)
        damage = _damage(path)
        if damage is not None:
            for made in _companions(path) - beside:  # what the check itself opened
                made.unlink(missing_ok=True)
            aside = _move_aside(path)
            moved.append(f"{path} is damaged ({damage}); it is kept as {aside.name} beside it")
        elif not _has_mark(path, *mark):
            raise DataDirUnusable(
                f"{path} is a SQLite database of something else, not the runtime's {name}; "
                "move it out of the data dir, or pass another --data-dir"
            )
    if moved:
        raise DataDirUnusable(
            f"{'; '.join(moved)}: start again to begin without what it held, or put a backup "
            "in its place first"
        )


def _companions(path: Path) -> set[Path]:
    return {p for s in _COMPANIONS if (p := path.with_name(path.name + s)).exists()}


def _damage(path: Path) -> str | None:
    """What SQLite finds wrong with the file, or None when it is sound: read-only, so a
    damaged file is not written to, and through its WAL, so a file a killed checkpoint left
    half-copied is seen as SQLite will see it (sound). 0.15 s for 100 MB."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise _unreadable(path, exc) from None
    try:
        rows = db.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.DatabaseError as exc:
        if exc.sqlite_errorcode & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
            return str(exc)
        raise _unreadable(path, exc) from None
    finally:
        db.close()
    verdict = str(rows[0][0]) if rows else "no answer to a check"
    return None if verdict == "ok" else verdict


def _unreadable(path: Path, exc: sqlite3.Error) -> DataDirUnusable:
    return DataDirUnusable(
        f"cannot read {path} ({exc}); make it readable, or pass another --data-dir"
    )


def _has_mark(path: Path, table: str, column: str) -> bool:
    """True when the file is empty of tables or has the mark of its kind."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
    finally:
        db.close()
    return tables[0] == 0 or column in columns


def _move_aside(path: Path) -> Path:
    """Rename the file and its WAL and shared-memory index to `NAME.corrupt-<UTC time>`
    (and its `-wal`, `-shm`, the names SQLite looks for beside it): kept whole for whoever
    repairs it, and out of the way of a new database, which would otherwise replay the old
    WAL into itself. A name already taken gets a number: nothing kept aside is replaced."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    taken = 1
    while any(aside.with_name(aside.name + s).exists() for s in ("", *_COMPANIONS)):
        taken += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{taken}")
    for suffix in ("", *_COMPANIONS):
        source = path.with_name(path.name + suffix)
        if source.exists():
            os.replace(source, aside.with_name(aside.name + suffix))
    return aside
