"""`lineup bench chaos` for one minute: the whole runtime under a mixed workload and at least
30 faults of at least 6 kinds loses, repeats and reorders nothing, and every tool call ends
with exactly one final outcome; the whiteboard's save, whose consent card the user answers
while the faults run, is allowed and saved."""

from __future__ import annotations

import json
import subprocess
import sys


def test_a_minute_of_chaos_loses_and_repeats_nothing() -> None:
    command = [sys.executable, "-m", "lineup.cli", "bench", "chaos", "--minutes", "1"]
    done = subprocess.run(
        [*command, "--seed", "1", "--json"], capture_output=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    record = json.loads(done.stdout)
    assert record["failed"] == [], record
    for direction in ("agent_to_user", "user_to_agent"):
        counts = record[direction]
        assert counts["sent"] > 0, record
        assert counts["lost"] == counts["duplicated"] == counts["reordered"] == 0, record
        assert counts["delivered"] == counts["sent"], record
    calls = record["tool_calls"]
    assert calls["sent"] > 0 and calls["one_final"] == calls["sent"], record
    assert sum(record["faults"].values()) >= 30, record["faults"]
    assert len(record["faults"]) >= 6, record["faults"]
    assert record["recovery_p50_ms"] is not None, record
    assert set(record["recovery_by_kind_ms"]) <= set(record["faults"]), record
    workload = record["workload"]
    assert workload["capability"] == "allowed", workload
    assert workload["consent_answers"] >= 1, workload
