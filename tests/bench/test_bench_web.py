"""`lineup bench web` runs end to end on a tiny size and reports every figure; stopped by
SIGTERM mid-run, it leaves nothing behind.

Speed is measured by the bench, never asserted here: this checks only that each figure is
there and positive, that the target has its verdict, that the temp dir is gone and that no
process the bench started (the AppServer, the runtime, chromedriver, Chromium: each names
the temp dir on its command line) outlives it.
"""

from __future__ import annotations

import json
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.bench.test_bench_kernel import _processes_mentioning

FIGURES = [
    "render_p50_ms",
    "render_p99_ms",
    "runtime_p50_ms",
    "runtime_p99_ms",
    "log_to_page_p50_ms",
    "page_ready_ms",
    "page_ready_max_ms",
    "web_rss_mib",
    "web_pss_mib",
    "clock_offset_bound_ms",
    "stage_ready_ms",
    "stage_ready_max_ms",
    "runtime_launch_ms",
    "record_to_artifact_ms",
    "record_page_ms",
    "bare_upload_ms",
]
HEADER = ["date", "cpus", "python", "sqlite", "chromium", "loadavg_1m"]


def _bench(tmp_path: Path, *sizes: str) -> list[str]:
    return [sys.executable, "-m", "lineup.cli", "bench", "web", *sizes, "--work-dir", str(tmp_path)]


def test_bench_web_reports_every_figure_and_cleans_up(tmp_path: Path) -> None:
    done = subprocess.run(
        _bench(
            tmp_path,
            *("--messages", "20", "--loads", "2", "--launches", "2", "--recordings", "1"),
            "--json",
        ),
        capture_output=True,
        timeout=180,  # a hang guard, not a speed check
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    record = json.loads(done.stdout)
    for key in FIGURES:
        assert isinstance(record[key], (int, float)), key
        assert record[key] > 0, key
    for key in HEADER:
        assert record[key], key
    assert (record["messages"], record["loads"], record["rate"], record["launches"]) == (
        20,
        2,
        50,
        2,
    )
    # The page can show a message only after the chat app has it.
    assert record["render_p50_ms"] > record["runtime_p50_ms"]
    # The stage shows an app only after the runtime has launched it.
    assert record["stage_ready_ms"] > record["runtime_launch_ms"]
    # The page's part of a recording's way is a part of it.
    assert record["record_to_artifact_ms"] > record["record_page_ms"]
    assert list(record["targets"]) == ["render_p50_ms", "stage_ready_ms", "record_to_artifact_ms"]
    assert all(isinstance(target["met"], bool) for target in record["targets"].values())
    assert list(tmp_path.iterdir()) == []
    assert _processes_mentioning(str(tmp_path)) == []


def test_bench_web_stopped_by_sigterm_stops_everything(tmp_path: Path) -> None:
    with subprocess.Popen(
        _bench(tmp_path, "--messages", "5000"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as bench:
        try:
            _wait_for_line(bench, "agent messages at")
            # The agent sends: the AppServer, the runtime and the browser all run.
            assert any("chromium" in found for found in _processes_mentioning(str(tmp_path)))
            bench.send_signal(signal.SIGTERM)
            assert bench.wait(timeout=60) == 130
        finally:
            if bench.poll() is None:
                bench.kill()
    assert list(tmp_path.iterdir()) == []
    assert _processes_mentioning(str(tmp_path)) == []


def _wait_for_line(process: subprocess.Popen[str], text: str) -> None:
    """Read `process`'s stderr until a line holds `text`."""
    assert process.stderr is not None
    said: list[str] = []
    with selectors.DefaultSelector() as waiting:
        waiting.register(process.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + 120  # a hang guard
        while not any(text in line for line in said):
            assert waiting.select(deadline - time.monotonic()), said
            line = process.stderr.readline()
            assert line, said  # it ended before saying it
            said.append(line)
