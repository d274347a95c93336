"""`lineup bench e2e` runs end to end on a tiny size and reports every figure.

Speed is measured by the bench, never asserted here: this checks only that
each figure is there and positive, that the temp dir is gone and that no process the bench
started outlives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.bench.test_bench_kernel import _processes_mentioning

FIGURES = [
    "catchup_msgs_per_s",
    "live_p50_ms",
    "live_p99_ms",
    "cold_start_s",
    "total_rss_mib",
    "live_msgs_per_s",
    "baseline_live_msgs_per_s",
    "baseline_live_p50_ms",
    "baseline_live_p99_ms",
    "baseline_catchup_msgs_per_s",
    "baseline_appserver_rss_mib",
]
TARGETS = {
    "catchup_msgs_per_s",
    "live_p50_ms",
    "live_p99_ms",
    "cold_start_s",
    "total_rss_mib",
    "idle_cpu_pct",
    "idle_wakeups_per_s",
}


def test_bench_e2e_reports_every_figure_and_cleans_up(tmp_path: Path) -> None:
    sizes = ["--messages", "30", "--paced", "10", "--backlog", "300", "--idle-s", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.e2e", *sizes, "--json", "--work-dir", str(tmp_path)],
        capture_output=True,
        timeout=120,  # a hang guard, not a speed check
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    record = json.loads(done.stdout)
    for key in FIGURES:
        assert isinstance(record[key], (int, float)), key
        assert record[key] > 0, key
    assert set(record["targets"]) == TARGETS
    assert all(isinstance(v["met"], bool) for v in record["targets"].values())
    assert record["backlog"] == 300
    assert record["idle_s"] == 2
    assert 0 <= record["idle_cpu_pct"] < 200, record["idle_cpu_pct"]  # a share of a core
    assert 0 <= record["idle_after_catchup_cpu_pct"] < 200, record
    assert record["idle_wakeups_per_s"] >= 0 and record["idle_after_catchup_wakeups_per_s"] >= 0
    assert record["runtime_processes"] > 1
    assert list(tmp_path.iterdir()) == []
    assert _processes_mentioning(str(tmp_path)) == []
