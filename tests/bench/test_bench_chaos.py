"""`lineup bench chaos`: the whole runtime under a mixed workload and at least 30 faults a
minute of at least 6 kinds loses, repeats and reorders nothing, and every tool call ends
with exactly one final outcome; the whiteboard's save, whose consent card the user answers
while the faults run, is allowed and saved.

The default run is a quarter of a minute under a seed whose first eight faults are of seven
kinds, the root `lineup run` killed among them, and the slowest (the AppServer's own faults,
seconds each) last: a loaded machine still gets through them in the time. The minute of
seed 1 is a soak (`pytest -m soak`)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest

FAULTS_PER_MINUTE = 30
KINDS = 6
# Its first eight faults are of seven kinds (six without the small disk of a root run).
SHORT_SEED = 450


def _chaos(minutes: float, seed: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "lineup.cli", "bench", "chaos", "--minutes", str(minutes)]
    done = subprocess.run(
        [*command, "--seed", str(seed), "--json"], capture_output=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    record: dict[str, Any] = json.loads(done.stdout)
    return record


def _nothing_lost_or_repeated(record: dict[str, Any], minutes: float) -> None:
    assert record["failed"] == [], record
    for direction in ("agent_to_user", "user_to_agent"):
        counts = record[direction]
        assert counts["sent"] > 0, record
        assert counts["lost"] == counts["duplicated"] == counts["reordered"] == 0, record
        assert counts["delivered"] == counts["sent"], record
    calls = record["tool_calls"]
    assert calls["sent"] > 0 and calls["one_final"] == calls["sent"], record
    faults = record["faults"]
    assert sum(faults.values()) >= math.ceil(FAULTS_PER_MINUTE * minutes), faults
    assert len(faults) >= KINDS, faults
    assert record["recovery_p50_ms"] is not None, record
    assert set(record["recovery_by_kind_ms"]) <= set(faults), record
    workload = record["workload"]
    assert workload["capability"] == "allowed", workload
    assert workload["consent_answers"] >= 1, workload


def test_a_quarter_minute_of_chaos_loses_and_repeats_nothing() -> None:
    _nothing_lost_or_repeated(_chaos(0.25, SHORT_SEED), 0.25)


@pytest.mark.soak
def test_a_minute_of_chaos_loses_and_repeats_nothing() -> None:
    _nothing_lost_or_repeated(_chaos(1, 1), 1)
