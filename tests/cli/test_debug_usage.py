"""`lineup debug usage`: every part, database and table of a stopped runtime's data dir,
beside its bound, read-only; `lineup debug status` warns when the data dir takes over
half of its disk."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from actors.kernel import MailboxStore
from actors.store._schema import open_db

from ..small_disk import small_disk


def _lineup(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineup.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _data_dir(where: Path) -> Path:
    """A stopped runtime's data dir with real databases and a log."""
    where.mkdir()
    store = MailboxStore(where / "mailbox.db")
    store.begin()
    store.insert_many([(f"m{i}", "r", "s", "t", b"\x80" * 100, False) for i in range(50)])
    store.commit()
    store.close()
    open_db(where).close()
    (where / "logs").mkdir()
    (where / "logs" / "store.log").write_bytes(b"x" * 3000)
    return where


def test_usage_shows_every_part_and_table_with_its_bound_and_status_warns(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", 8) as disk:
        data_dir = _data_dir(disk / "data")
        done = _lineup("debug", "usage", "--json", "--data-dir", data_dir)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        parts = {p["part"]: p for p in report["parts"]}
        assert parts["logs"]["bytes"] >= 3000 and "4 MiB" in parts["logs"]["bound"]
        assert parts["mailbox"]["bytes"] > 0 and parts["mailbox"]["rule"]
        mailbox = next(d for d in report["databases"] if d["file"] == "mailbox.db")
        messages = next(t for t in mailbox["tables"] if t["table"] == "messages")
        assert messages["rows"] == 50 and messages["bytes"] > 5000 and messages["bound"]
        runtime = next(d for d in report["databases"] if d["file"] == "runtime.db")
        conversation = next(t for t in runtime["tables"] if t["table"] == "messages")
        assert "kept" in conversation["rule"]  # the user's: never pruned
        assert report["bytes"] == sum(p["bytes"] for p in report["parts"])

        table = _lineup("debug", "usage", "--data-dir", data_dir)
        assert table.returncode == 0 and "runtime.db" in table.stdout, table.stderr
        status = json.loads(_lineup("debug", "status", "--json", "--data-dir", data_dir).stdout)
        assert "disk_warning" not in status  # well under half of 8 MiB
        (data_dir / "artifacts").mkdir()
        (data_dir / "artifacts" / "big").write_bytes(b"\0" * (5 << 20))
        status = json.loads(_lineup("debug", "status", "--json", "--data-dir", data_dir).stdout)
        assert status["disk_warning"].startswith("the data dir takes")
        assert "lineup debug usage" in status["disk_warning"]
        text = _lineup("debug", "status", "--data-dir", data_dir).stdout
        assert "warning" in text


def test_usage_of_a_dir_without_a_runtime_says_what_to_do(tmp_path: Path) -> None:
    done = _lineup("debug", "usage", "--data-dir", tmp_path)
    assert done.returncode == 2
    assert "point at the runtime's data dir" in done.stderr
