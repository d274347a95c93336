"""`lineup bench chaos --power-cuts N`: the power cut under the whole runtime at random
moments (mid-commit, mid-install, mid-artifact) loses nothing that was acknowledged and
leaves no file damaged; the runtime comes back after every cut.

Real FUSE (mounting needs root, as CI runs), the real runtime, AppServer and sample apps."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

COMMAND = [sys.executable, "-m", "lineup.cli", "bench", "chaos"]
ONE_CUT = ["--power-cuts", "1"]


def power_cuts(count: int, *, seed: int, timeout: float) -> dict[str, Any]:
    done = subprocess.run(
        [*COMMAND, "--power-cuts", str(count), "--seed", str(seed), "--json"],
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    record: dict[str, Any] = json.loads(done.stdout)
    return record


def assert_the_contract_held(record: dict[str, Any], cuts: int) -> None:
    assert record["failed"] == [], record
    assert record["power_cuts"] == cuts, record
    assert record["contract_violations"] == record["corrupt_files"] == 0, record
    for direction in ("agent_to_user", "user_to_agent"):
        counts = record[direction]
        assert counts["sent"] > 0 and counts["delivered"] == counts["sent"], record
    calls = record["tool_calls"]
    assert calls["sent"] > 0 and calls["one_final"] == calls["sent"], record
    log = record["power_cut_log"]
    assert all(cut["restart_s"] is not None for cut in log), log
    # The cuts took something each time: writes no fsync had reached were dropped.
    assert sum(cut["writes_dropped"] for cut in log) >= cuts, log


def test_three_power_cuts_lose_nothing_acknowledged_and_damage_no_file() -> None:
    record = power_cuts(3, seed=8, timeout=300)
    assert_the_contract_held(record, 3)
    # Seed 8 cuts after an update's answer, mid-workload and mid-artifact.
    assert [cut["moment"] for cut in record["power_cut_log"]] == [
        "installed",
        "workload",
        "artifact",
    ]
    assert record["workload"]["app_operations_answered"] == 1, record["workload"]


@pytest.mark.soak
def test_twenty_power_cuts_lose_nothing_acknowledged_and_damage_no_file() -> None:
    record = power_cuts(20, seed=2, timeout=3600)
    assert_the_contract_held(record, 20)
    assert record["workload"]["app_operations_answered"] >= 1, record["workload"]


def test_power_cuts_need_root_and_say_so() -> None:
    done = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *COMMAND, *ONE_CUT],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done
    said = " ".join(done.stderr.decode().split())  # the terminal's width wraps it
    assert said.endswith("which needs root: run the bench as root"), said
