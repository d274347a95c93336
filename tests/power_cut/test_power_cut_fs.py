"""The power-cut file system keeps what was fsynced and loses what was not: data, names,
and SQLite's commits as its `synchronous` setting promises.

Real FUSE (mounting needs root, as CI runs), real processes killed with SIGKILL, real
SQLite; every cut unmounts and mounts the backing directory again."""

from __future__ import annotations

import errno
import os
import select
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.power_cut import PowerCutDisk

KIB4 = 4096


def write(path: Path, data: bytes, *, fsync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_fsynced_data_survives_a_cut_and_unsynced_data_is_gone(disk: PowerCutDisk) -> None:
    root = disk.mount_point
    synced = b"synced " * 1000
    write(root / "kept", synced, fsync=True)
    fsync(root)
    # Its data fsynced, its name never: a cut takes the file.
    write(root / "nameless", b"data", fsync=True)
    # Changes after the sync: overwritten, cut short, grown past a hole.
    fd = os.open(root / "kept", os.O_WRONLY)
    os.pwrite(fd, b"UNSYNCED", 0)
    os.ftruncate(fd, 10)
    os.pwrite(fd, b"end", 3 * KIB4)
    os.close(fd)
    # What processes read is the pending state (an open drops the kernel's cache).
    pending = b"UNSYNCED" + synced[8:10] + bytes(3 * KIB4 - 10) + b"end"
    assert (root / "kept").read_bytes() == pending

    report = disk.power_cut()

    assert (root / "kept").read_bytes() == synced
    assert not (root / "nameless").exists()
    assert (report.changes_dropped, report.names_undone) == (3, 1)
    disk.unmount()
    assert sorted(os.listdir(disk.backing)) == ["kept"]


def test_an_unsynced_rename_is_undone_and_a_synced_one_stays(disk: PowerCutDisk) -> None:
    root = disk.mount_point
    (root / "gone").mkdir()
    write(root / "gone" / "inside", b"x", fsync=True)
    write(root / "target", b"old", fsync=True)
    write(root / "removed", b"still here", fsync=True)
    fsync(root)
    # The atomic replace without the directory's fsync, an unlink, a directory.
    write(root / "target.tmp", b"new", fsync=True)
    os.rename(root / "target.tmp", root / "target")
    (root / "removed").unlink()
    (root / "made").mkdir()
    write(root / "made" / "file", b"y", fsync=True)
    fsync(root / "made")  # its entries, and every change before them, are durable now
    with pytest.raises(OSError) as refused:
        (root / "made").rmdir()
    assert refused.value.errno == errno.ENOTEMPTY
    os.rename(root / "gone", root / "moved")
    assert (root / "target").read_bytes() == b"new"

    disk.power_cut()

    # The rename of the directory came after the last fsync: undone.
    assert sorted(os.listdir(root)) == ["gone", "made", "target"]
    assert (root / "gone" / "inside").read_bytes() == b"x"
    assert (root / "target").read_bytes() == b"new"
    assert (root / "made" / "file").read_bytes() == b"y"

    os.rename(root / "target", root / "renamed")
    disk.power_cut()
    assert sorted(os.listdir(root)) == ["gone", "made", "target"]

    os.rename(root / "target", root / "renamed")
    fsync(root)
    disk.power_cut()
    assert sorted(os.listdir(root)) == ["gone", "made", "renamed"]
    disk.unmount()


def test_a_seeded_cut_keeps_a_prefix_of_each_files_writes_torn_at_4_kib(
    disk: PowerCutDisk,
) -> None:
    root = disk.mount_point
    chunks = [bytes([value]) * (3 * KIB4) for value in b"abcd"]
    whole = b"".join(chunks)
    write(root / "log", b"", fsync=True)
    fsync(root)
    seen = set()
    for seed in range(6):
        fd = os.open(root / "log", os.O_WRONLY)
        for chunk in chunks:
            os.write(fd, chunk)
        os.close(fd)

        report = disk.power_cut(seed=seed)

        left = (root / "log").read_bytes()
        assert left == whole[: len(left)]
        assert len(left) % KIB4 == 0
        assert report.changes_kept + report.changes_dropped == len(chunks)
        assert len(left) // (3 * KIB4) == report.changes_kept
        seen.add((report.changes_kept, report.writes_torn))
        # Back to empty, durably, for the next seed.
        write(root / "log", b"", fsync=True)
    # The seeds keep different prefixes, some of them torn mid-write.
    assert len({kept for kept, _ in seen}) > 2
    assert any(torn for _, torn in seen)
    disk.unmount()


def commit_until_cut(
    disk: PowerCutDisk, synchronous: str, *, checkpoint_pages: int, seed: int | None
) -> int:
    """Run the writer until it committed at least 20 more rows, cut at that moment (it is
    still committing) and mount again; the last row it said was committed."""
    db = disk.mount_point / "test.db"
    writer = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("sqlite_writer.py")),
            str(db),
            synchronous,
            str(checkpoint_pages),
        ],
        stdout=subprocess.PIPE,
    )
    assert writer.stdout is not None
    said = b""
    deadline = time.monotonic() + 10
    while said.count(b"\n") < 20:
        assert time.monotonic() < deadline, "the writer committed too little in 10 s"
        ready, _, _ = select.select([writer.stdout], [], [], 1)
        if ready:
            said += os.read(writer.stdout.fileno(), 4096)
    disk.power_cut(seed=seed)
    writer.wait()
    said += writer.stdout.read()
    writer.stdout.close()
    # Only whole lines: the kill may have cut the last one short.
    return int(said[: said.rindex(b"\n")].split()[-1])


def read_rows(disk: PowerCutDisk) -> list[int]:
    """The rows' numbers, after checking the whole database."""
    db = sqlite3.connect(disk.mount_point / "test.db")
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return [n for (n,) in db.execute("SELECT n FROM rows ORDER BY n")]
    finally:
        db.close()


def test_a_full_commit_survives_every_cut(disk: PowerCutDisk) -> None:
    for seed in (None, 1, 2):
        committed = commit_until_cut(disk, "FULL", checkpoint_pages=8, seed=seed)
        rows = read_rows(disk)
        assert rows == list(range(1, len(rows) + 1))
        assert len(rows) >= committed
    disk.unmount()


def test_a_normal_commit_may_vanish_but_the_database_is_never_corrupt(
    disk: PowerCutDisk,
) -> None:
    # No checkpoint, so no fsync after the table was made: every row goes with the power.
    committed = commit_until_cut(disk, "NORMAL", checkpoint_pages=100_000, seed=None)
    assert committed >= 20
    assert read_rows(disk) == []
    # Checkpoints every few commits, cuts torn anywhere: always a whole database.
    for seed in (1, 2, 3):
        commit_until_cut(disk, "NORMAL", checkpoint_pages=8, seed=seed)
        rows = read_rows(disk)
        assert rows == list(range(1, len(rows) + 1))
    disk.unmount()
