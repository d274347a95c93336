"""`lineup bench tools` runs end to end on a tiny size and reports every figure, the MCP
client's calls through `lineup agent mcp` (c) and through a bare MCP server (d) with them.

Speed is measured by the bench, never asserted here: this checks only that each figure is
there and positive, that every call (runtime and baseline) ended with a result, that the
temp dir is gone and that no process the bench started outlives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.bench.test_bench_kernel import _processes_mentioning

FIGURES = [
    "call_p50_ms",
    "call_p99_ms",
    "bare_roundtrip_p50_ms",
    "bare_roundtrip_p99_ms",
    "call_p50_ratio",
    "calls_per_s",
    "bare_calls_per_s",
    "warmup_call_ms",
    "call_unloaded_p50_ms",
    "bare_unloaded_p50_ms",
    "call_unloaded_ratio",
    "cpu_ms_per_call_total",
    "bare_cpu_ms_per_call_total",
    "commits_per_call",
    "unloaded_commits_per_call",
    "runtime_cpu_ms_per_call",
    "hops_per_call",
    "calls_per_s_ratio",
    "mcp_call_p50_ms",
    "mcp_call_p99_ms",
    "mcp_bare_p50_ms",
    "mcp_bare_p99_ms",
    "mcp_runtime_p50_ms",
]
HEADER = ["date", "cpus", "python", "sqlite", "loadavg_1m"]
LEGS = {"to_accepted", "accepted_to_running", "running_to_final", "final_to_agent"}


def test_bench_tools_reports_every_figure_and_cleans_up(tmp_path: Path) -> None:
    sizes = ["--calls", "10", "--unloaded", "5", "--burst", "20", "--in-flight", "5"]
    sizes += ["--mcp-calls", "5"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lineup.cli",
            "bench",
            "tools",
            *sizes,
            "--json",
            "--work-dir",
            str(tmp_path),
        ],
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
    sizes_seen = ("calls", "unloaded_calls", "burst", "in_flight", "mcp_calls")
    assert tuple(record[key] for key in sizes_seen) == (10, 5, 20, 5, 5)
    assert isinstance(record["mcp_call_ratio"], float)
    # Every call ended with a result, on both paths, and the runtime's rows say so too.
    assert record["calls_succeeded"] == 35
    assert record["calls_failed"] == {} and record["bare_calls_failed"] == {}
    assert record["paced_call_rows"] == {"succeeded": 10}
    for steps in ("call_steps_p50_ms", "call_steps_unloaded_p50_ms"):
        assert set(record[steps]) == LEGS
        assert all(v is not None for v in record[steps].values())
    assert {"supervisor", "store", "tool_router", "app.benchtool"} <= set(record["cpu_ms_per_call"])
    for found in ("deepest_mailboxes_paced", "deepest_mailboxes_burst"):
        assert all(isinstance(depth, int) for depth in record[found].values()), found
    assert set(record["targets"]) == {
        "call_p50_ratio",
        "call_unloaded_ratio",
        "unloaded_commits_per_call",
        "runtime_cpu_ms_per_call",
        "deepest_mailbox_paced",
        "calls_per_s",
        "calls_per_s_ratio",
        "mcp_call_ratio",
    }
    # One call's hops, from the mailbox: from the transport, through the tool router and
    # the app, back to the transport, with no store round trip on the way.
    hops = record["call_hops"]
    assert record["hops_per_call"] == len(hops)
    assert hops[:2] == [
        "transport → router router.inbound",
        "router → tool_router tool_router.inbound",
    ], hops
    # The app is handed the call while the receipt for the agent waits for the WAL's sync.
    assert hops[2:4] == [
        "tool_router → app.benchtool app.tool.invoke",
        "tool_router → transport transport.submit",
    ], hops
    assert hops[-2:] == [
        "app.benchtool → tool_router tool_router.report",
        "tool_router → transport transport.submit",
    ], hops
    assert not [hop for hop in hops if "store.tools" in hop or "reply" in hop], hops
    assert all(isinstance(v["met"], bool) for v in record["targets"].values())
    assert list(tmp_path.iterdir()) == []
    assert _processes_mentioning(str(tmp_path)) == []
