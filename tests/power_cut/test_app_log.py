"""An app's log under a power cut: the write that ends a tool call is not synced, and one
that a cut takes leaves the call as a restarted app would find it with its final report
never sent, under the same report index (so the same kernel id).

Real FUSE, a real app log (SQLite at FULL) in a process killed by the cut."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from apps.sdk._log import EventLog
from bench.power_cut import PowerCutDisk

ROOT = Path(__file__).resolve().parents[2]


def _write_then_cut(disk: PowerCutDisk, calls: int) -> list[dict[str, object]]:
    """The calls the log holds after the writer recorded `calls` and the power went."""
    writer = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("tool_call_writer.py")),
         str(disk.mount_point), str(calls)],
        stdout=subprocess.PIPE, cwd=ROOT, env={"PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert writer.stdout is not None
    assert writer.stdout.readline() == b"done\n"
    disk.power_cut()
    writer.wait()
    writer.stdout.close()
    log = EventLog(disk.mount_point)
    try:
        return log.tool_calls()
    finally:
        log.db.close()


def test_a_cut_takes_an_unsynced_end_and_the_call_is_ended_again_under_its_index(
    disk: PowerCutDisk,
) -> None:
    (call,) = _write_then_cut(disk, calls=1)
    # The record made before the handler ran stays; the end after it went with the power.
    assert call["call_id"] == "call-0"
    assert (call["state"], call["reports"], call["report"]) == ("running", 0, None)
    log = EventLog(disk.mount_point)
    try:
        assert log.finish_tool_call("call-0", '{"kind": "error"}') == 0  # the lost one's
    finally:
        log.db.close()
    disk.unmount()


def test_the_next_synced_write_keeps_the_end_before_it(disk: PowerCutDisk) -> None:
    first, second = _write_then_cut(disk, calls=2)
    assert (first["state"], first["reports"]) == ("finished", 1)
    assert (second["state"], second["reports"]) == ("running", 0)
    disk.unmount()
