"""`lineup bench apps` runs end to end with one round and reports every figure.

Speed is measured by the bench, never asserted here: this checks only that
each figure is there and positive, that each launch was made the way it says, that the temp
dir is gone and that no process the bench started outlives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.bench.test_bench_kernel import _processes_mentioning

FIGURES = [
    "verify_ms",
    "verify_bare_ms",
    "verify_ratio",
    "install_ms",
    "remove_ms",
    "launch_ms",
    "launch_max_ms",
    "launch_exec_ms",
    "launch_bare_fork_ms",
    "launch_bare_exec_ms",
    "launch_ratio",
    "launch_to_exec_ratio",
    "close_ms",
    "restart_ms",
    "restart_exec_ms",
    "app_rss_mib",
    "app_pss_mib",
    "app_exec_rss_mib",
    "app_exec_pss_mib",
    "actor_rss_mib",
    "actor_pss_mib",
]


def test_bench_apps_reports_every_figure_and_cleans_up(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lineup.cli",
            "bench",
            "apps",
            "--json",
            "--rounds",
            "1",
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
    assert record["rounds"] == 1
    assert all(len(times) == 1 for times in record["rounds_ms"].values())
    # the app was forked from the app zygote, and the baseline's exec'd: both fully jailed
    assert (record["app_launch"], record["app_isolation"]) == ("zygote", "full")
    assert record["app_exec_launch"].startswith("exec") and record["app_exec_isolation"] == "full"
    assert set(record["targets"]) == {"launch_ms", "launch_to_exec_ratio", "app_pss_mib"}
    assert all(isinstance(t["met"], bool) for t in record["targets"].values())
    assert list(tmp_path.iterdir()) == []
    assert _processes_mentioning(str(tmp_path)) == []
