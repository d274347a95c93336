"""`lineup bench kernel` runs end to end on a tiny size and reports every figure.

Speed is measured by the bench, never asserted here: this checks only that
each figure is there and positive, that the temp dir is gone and that no process the bench
started outlives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIGURES = [
    "kernel_msgs_per_s",
    "durable_baseline_msgs_per_s",
    "bare_socketpair_msgs_per_s",
    "ratio_vs_durable_baseline",
    "unchecked_msgs_per_s",
    "unchecked_p50_ms",
    "authz_ratio",
    "p50_ms",
    "p99_ms",
    "baseline_p50_ms",
    "baseline_p99_ms",
    "restart_p50_ms",
    "restart_p99_ms",
    "actor_rss_mib",
    "messages",
]


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # it exited while we looked
        if text in args:
            found.append(args)
    return found


def test_bench_kernel_reports_every_figure_and_cleans_up(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.kernel",
            "--messages",
            "2000",
            "--rounds",
            "1",
            "--paced",
            "200",
            "--kills",
            "2",
            "--json",
            "--work-dir",
            str(tmp_path),
        ],
        capture_output=True,
        timeout=120,  # a hang guard, not a speed check
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    record = json.loads(done.stdout)
    for key in FIGURES:
        assert isinstance(record[key], (int, float)), key
        assert record[key] > 0, key
    assert record["synchronous"] == "FULL"
    assert record["restarts_measured"] == 2
    assert list(tmp_path.iterdir()) == []
    assert _processes_mentioning(str(tmp_path)) == []
