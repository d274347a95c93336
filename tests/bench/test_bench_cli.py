"""`lineup bench cli` runs on a tiny size and reports every figure (speed is measured by
the bench, never asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_bench_cli_reports_every_figure() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lineup.cli", "bench", "cli", "--runs", "1", "--json"],
        capture_output=True,
        timeout=60,  # a hang guard, not a speed check
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    record = json.loads(done.stdout)
    for key in ("help_ms", "status_ms", "python_ms", "help_ratio"):
        assert isinstance(record[key], (int, float)), key
        assert record[key] > 0, key
    assert record["runs"] == 1
    assert isinstance(record["help_meets_target"], bool)
