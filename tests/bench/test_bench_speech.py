"""`lineup bench speech` runs end to end on one round and reports every figure.

Speed is measured by the bench, never asserted here: this checks only that each figure is
there and positive, that both ways heard the same words, that the temp dir is gone and that
no process the bench started outlives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.bench.test_bench_kernel import _processes_mentioning

FIGURES = [
    "audio_ms",
    "sphinx_alone_ms",
    "transcribe_ms",
    "sphinx_alone_rtf",
    "transcribe_rtf",
    "ratio",
]


def test_bench_speech_reports_every_figure_and_cleans_up(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "lineup.cli", "bench", "speech", "--rounds", "1"]
    done = subprocess.run(
        [*command, "--text", "twenty five", "--json", "--work-dir", str(tmp_path)],
        capture_output=True,
        timeout=300,  # a hang guard, not a speed check
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    record = json.loads(done.stdout)
    for key in FIGURES:
        assert isinstance(record[key], (int, float)) and record[key] > 0, key
    assert record["same_text_each_way"] is True and "twenty five" in record["heard"]
    assert isinstance(record["meets_target"], bool) and record["target_ratio"] == 1.2
    assert len(record["transcribe_each_ms"]) == len(record["sphinx_alone_each_ms"]) == 1
    assert record["settings"]["cpus"] and record["settings"]["loadavg_1m"]
    assert list(tmp_path.iterdir()) == []
    assert _processes_mentioning(str(tmp_path)) == []
