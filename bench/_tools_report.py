"""`lineup bench tools`'s result record (`--json`) and its table, with the tool targets, and
where a runtime call's time goes (the steps of its history in `tool_router.db`, the CPU of
each process, the process hops of one call)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ._e2e_report import mark, verdict
from ._envelope import percentile
from ._tools_flow import Batch
from ._tools_mcp import mcp_figures

TARGET_RATIO = 3.0  # call p50 / bare round-trip p50
TARGET_CALLS_PER_S = 500.0  # on 2 cores
TARGET_BURST_SHARE = 0.5  # the burst's calls/s over the bare path's
TARGET_COMMITS = 8.0  # the supervisor's commits per call made one at a time
TARGET_DEPTH = 20  # the deepest mailbox at 100 calls/s
# Not the runtime's: the AppServer and the bench's own process (the agent).
OUTSIDE = frozenset({"appserver", "bench (agent)"})
# (c) within the runtime's own call (one at a time) plus this many bare MCP round trips (d).
TARGET_MCP_RATIO = 2.0
# The legs of a call, between the times the agent and the tool router took: the agent's
# submit, the history's `accepted`, `running` and final step, the final at the agent.
STEPS = (
    ("to_accepted", "agent submit → tool router accepted (AppServer, transport, router, store)"),
    ("accepted_to_running", "accepted → running (app.tool.invoke sent to the app)"),
    ("running_to_final", "running → the app's result at the tool router (app process and back)"),
    ("final_to_agent", "final → at the agent (transport, AppServer)"),
)
FINAL_EVENTS = ("succeeded", "failed")


def _r(value: float, digits: int = 3) -> float:
    return round(value, digits)


def call_steps(data_dir: Path, batch: Batch) -> dict[str, Any]:
    """Per leg, the p50 (ms) over the batch's calls, from each call's history in
    `tool_router.db` (the tool router's `at_ms`, whole ms) and the agent's own times (one
    machine, one clock); and what the calls' rows ended as."""
    from actors.tool_router import read_tool_calls

    rows = {row["call_id"]: row for row in read_tool_calls(data_dir)}
    legs: dict[str, list[float]] = {key: [] for key, _ in STEPS}
    states: Counter[str] = Counter()
    for call in batch.calls:
        row = rows.get(call.call_id)
        if row is None:
            states["missing"] += 1
            continue
        states[str(row["state"])] += 1
        at = {step["event"]: float(step["at_ms"]) for step in row["history"]}
        if not {"accepted", "running"} <= at.keys() or not at.keys() & set(FINAL_EVENTS):
            continue
        final = next(at[event] for event in FINAL_EVENTS if event in at)
        submitted = call.submitted_ns / 1e6
        legs["to_accepted"].append(at["accepted"] - submitted)
        legs["accepted_to_running"].append(at["running"] - at["accepted"])
        legs["running_to_final"].append(final - at["running"])
        legs["final_to_agent"].append(submitted + call.round_trip_ms - final)
    return {
        "p50_ms": {key: _r(percentile(v, 50), 2) if v else None for key, v in legs.items()},
        "rows": dict(states),
    }


def _failures(batch: Batch) -> dict[str, int]:
    return dict(Counter(call.final_type for call in batch.failed))


def result_record(
    *, settings: dict[str, Any], bare: dict[str, Any], ours: dict[str, Any]
) -> dict[str, Any]:
    """Every figure under a stable key; `bare_*` is (a), the bare WebSocket round trip."""
    unloaded: Batch = ours["unloaded"]
    paced: Batch = ours["paced"]
    burst: Batch = ours["burst"]
    bare_unloaded: Batch = bare["unloaded"]
    bare_paced: Batch = bare["paced"]
    bare_burst: Batch = bare["burst"]
    record: dict[str, Any] = {
        **settings,
        "call_p50_ms": _r(paced.p(50)),
        "call_p99_ms": _r(paced.p(99)),
        "bare_roundtrip_p50_ms": _r(bare_paced.p(50)),
        "bare_roundtrip_p99_ms": _r(bare_paced.p(99)),
        "call_p50_ratio": _r(paced.p(50) / bare_paced.p(50), 2),
        "calls_per_s": round(burst.calls_per_s),
        "bare_calls_per_s": round(bare_burst.calls_per_s),
        "calls_per_s_ratio": _r(burst.calls_per_s / bare_burst.calls_per_s, 2),
        "burst_s": _r(burst.seconds),
        "burst_call_p50_ms": _r(burst.p(50), 1),
        "bare_burst_roundtrip_p50_ms": _r(bare_burst.p(50), 1),
        "call_unloaded_p50_ms": _r(unloaded.p(50)),
        "call_unloaded_p99_ms": _r(unloaded.p(99)),
        "bare_unloaded_p50_ms": _r(bare_unloaded.p(50)),
        "call_unloaded_ratio": _r(unloaded.p(50) / bare_unloaded.p(50), 2),
        "warmup_call_ms": _r(ours["warm_ms"], 1),
        "calls_succeeded": sum(len(b.calls) - len(b.failed) for b in (unloaded, paced, burst)),
        "calls_failed": _failures(unloaded) | _failures(paced) | _failures(burst),
        "bare_calls_failed": _failures(bare_unloaded)
        | _failures(bare_paced)
        | _failures(bare_burst),
        "call_steps_p50_ms": ours["steps"]["paced"]["p50_ms"],
        "call_steps_unloaded_p50_ms": ours["steps"]["unloaded"]["p50_ms"],
        "paced_call_rows": ours["steps"]["paced"]["rows"],
        # What a call costs: per process over the burst, and the supervisor's commits.
        "cpu_ms_per_call": ours["burst_cost"]["cpu_ms_per_call"],
        "cpu_ms_per_call_total": ours["burst_cost"]["cpu_ms_per_call_total"],
        "bare_cpu_ms_per_call": bare["burst_cost"]["cpu_ms_per_call"],
        "bare_cpu_ms_per_call_total": bare["burst_cost"]["cpu_ms_per_call_total"],
        "unloaded_cpu_ms_per_call_total": ours["unloaded_cost"]["cpu_ms_per_call_total"],
        "commits_per_call": ours["burst_cost"]["commits_per_call"],
        "frames_per_call": ours["burst_cost"]["frames_per_call"],
        "unloaded_commits_per_call": ours["unloaded_cost"]["commits_per_call"],
        # The runtime's own processes over the burst, beside the bare path's total.
        "runtime_cpu_ms_per_call": _r(
            sum(
                ms
                for name, ms in ours["burst_cost"]["cpu_ms_per_call"].items()
                if name not in OUTSIDE
            ),
            2,
        ),
        "hops_per_call": len(ours["hops"]),
        "call_hops": ours["hops"],
        # Where calls wait: the deepest mailboxes (unhandled messages) seen during a batch.
        "deepest_mailboxes_paced": ours["paced_mailboxes"],
        "deepest_mailboxes_burst": ours["burst_mailboxes"],
        **mcp_figures(ours["mcp"]),
    }
    deepest = max(record["deepest_mailboxes_paced"].values(), default=0)
    record["targets"] = {
        "call_p50_ratio": verdict(record["call_p50_ratio"], "<=", TARGET_RATIO),
        "call_unloaded_ratio": verdict(record["call_unloaded_ratio"], "<=", TARGET_RATIO),
        "unloaded_commits_per_call": verdict(
            record["unloaded_commits_per_call"], "<=", TARGET_COMMITS
        ),
        "runtime_cpu_ms_per_call": verdict(
            record["runtime_cpu_ms_per_call"], "<=", record["bare_cpu_ms_per_call_total"]
        ),
        "deepest_mailbox_paced": verdict(deepest, "<=", TARGET_DEPTH),
        "calls_per_s": verdict(record["calls_per_s"], ">=", TARGET_CALLS_PER_S),
        "calls_per_s_ratio": verdict(record["calls_per_s_ratio"], ">=", TARGET_BURST_SHARE),
        "mcp_call_ratio": verdict(record["mcp_call_ratio"], "<=", TARGET_MCP_RATIO),
    }
    return record


def _figures(r: dict[str, Any]) -> Table:
    t = r["targets"]
    table = Table(
        title=f"lineup bench tools — {r['calls']:,} calls at {r['paced_rate']:g}/s, burst of"
        f" {r['burst']:,} with {r['in_flight']} in flight, {r['unloaded_calls']:,} one at a"
        f" time ({r['app_scope']}/{r['method']}); {r['date']}, {r['cpus']} CPUs,"
        f" Python {r['python']}, SQLite {r['sqlite']}",
        title_justify="left",
    )
    for column, justify in [
        ("measure", "left"),
        ("runtime (b)", "right"),
        ("bare WebSocket (a)", "right"),
        ("target", "left"),
        ("verdict", "left"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_row(
        "p50 at 100 calls/s, ms",
        f"{r['call_p50_ms']:.2f}",
        f"{r['bare_roundtrip_p50_ms']:.2f}",
    )
    table.add_row(
        "p99 at 100 calls/s, ms",
        f"{r['call_p99_ms']:.2f}",
        f"{r['bare_roundtrip_p99_ms']:.2f}",
    )
    table.add_row(
        "p50 ratio (b) / (a)",
        f"{r['call_p50_ratio']:.2f}",
        "",
        f"<= {TARGET_RATIO:g}",
        mark(t["call_p50_ratio"]),
    )
    table.add_row(
        "burst, calls/s",
        f"{r['calls_per_s']:,} ({r['burst_s']:.1f} s)",
        f"{r['bare_calls_per_s']:,}",
        f">= {TARGET_CALLS_PER_S:g}",
        mark(t["calls_per_s"]),
    )
    table.add_row(
        "burst share (b) / (a)",
        f"{r['calls_per_s_ratio']:.2f}",
        "",
        f">= {TARGET_BURST_SHARE:g}",
        mark(t["calls_per_s_ratio"]),
    )
    table.add_row(
        "burst p50, ms",
        f"{r['burst_call_p50_ms']:.1f}",
        f"{r['bare_burst_roundtrip_p50_ms']:.1f}",
    )
    table.add_row(
        "one at a time p50 (p99), ms",
        f"{r['call_unloaded_p50_ms']:.2f} ({r['call_unloaded_p99_ms']:.2f})",
        f"{r['bare_unloaded_p50_ms']:.2f}",
    )
    table.add_row(
        "one at a time p50 ratio (b) / (a)",
        f"{r['call_unloaded_ratio']:.2f}",
        "",
        f"<= {TARGET_RATIO:g}",
        mark(t["call_unloaded_ratio"]),
    )
    table.add_row(
        "supervisor commits per call one at a time",
        f"{r['unloaded_commits_per_call']:g}",
        "",
        f"<= {TARGET_COMMITS:g}",
        mark(t["unloaded_commits_per_call"]),
    )
    table.add_row(
        "CPU per call in the burst, ms",
        f"{r['cpu_ms_per_call_total']:.2f}",
        f"{r['bare_cpu_ms_per_call_total']:.2f}",
    )
    table.add_row(
        "the runtime's own CPU per call in the burst, ms",
        f"{r['runtime_cpu_ms_per_call']:.2f}",
        "",
        "<= (a)'s CPU per call",
        mark(t["runtime_cpu_ms_per_call"]),
    )
    failed = sum(r["calls_failed"].values())
    bare_failed = sum(r["bare_calls_failed"].values())
    table.add_row(
        "calls ended with a result",
        f"{r['calls_succeeded']:,}" + (f", [red]{failed:,} failed[/red]" if failed else ""),
        f"[red]{bare_failed:,} failed[/red]" if bare_failed else "",
    )
    return table


def _where(r: dict[str, Any]) -> Table:
    table = Table(
        title="where a runtime call's time goes (b): p50 per leg, from its history",
        title_justify="left",
    )
    table.add_column("leg")
    table.add_column("one at a time, ms", justify="right")
    table.add_column("at 100 calls/s, ms", justify="right")
    for key, label in STEPS:
        cells = [r[field].get(key) for field in ("call_steps_unloaded_p50_ms", "call_steps_p50_ms")]
        table.add_row(label, *("" if v is None else f"{v:.2f}" for v in cells))
    return table


def _cost(r: dict[str, Any]) -> Table:
    table = Table(title="CPU per call in the burst (b), by process", title_justify="left")
    table.add_column("process")
    table.add_column("ms", justify="right")
    for name, ms in r["cpu_ms_per_call"].items():
        if ms >= 0.05:
            table.add_row(name, f"{ms:.2f}")
    return table


def _mcp(r: dict[str, Any]) -> Table:
    table = Table(
        title=f"an MCP client's calls, {r['mcp_calls']:,} one at a time: (c) through `lineup"
        " agent mcp` to the runtime, (d) a bare MCP server over stdio",
        title_justify="left",
    )
    for column, justify in [
        ("measure", "left"),
        ("value", "right"),
        ("target", "left"),
        ("verdict", "left"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_row(
        "(c) MCP → bridge → runtime p50 (p99), ms",
        f"{r['mcp_call_p50_ms']:.2f} ({r['mcp_call_p99_ms']:.2f})",
    )
    table.add_row(
        "(d) bare MCP p50 (p99), ms", f"{r['mcp_bare_p50_ms']:.2f} ({r['mcp_bare_p99_ms']:.2f})"
    )
    table.add_row("(b) runtime, in turn with them, p50, ms", f"{r['mcp_runtime_p50_ms']:.2f}")
    table.add_row(
        "((c) - (b)) / (d)",
        f"{r['mcp_call_ratio']:.2f}",
        f"<= {TARGET_MCP_RATIO:g}",
        mark(r["targets"]["mcp_call_ratio"]),
    )
    return table


def print_table(record: dict[str, Any], console: Console) -> None:
    console.print(_figures(record))
    console.print(_mcp(record))
    console.print(_where(record))
    console.print(_cost(record))
    r = record

    def deepest(found: dict[str, int]) -> str:
        return ", ".join(f"{name} {depth:,}" for name, depth in found.items()) or "none"

    console.print(
        f"deepest mailboxes (unhandled messages) at 100 calls/s:"
        f" {deepest(r['deepest_mailboxes_paced'])}"
        f" (target <= {TARGET_DEPTH}: {mark(r['targets']['deepest_mailbox_paced'])});"
        f" in the burst: {deepest(r['deepest_mailboxes_burst'])}",
        highlight=False,
    )
    console.print(
        f"process hops of one call made one at a time: {r['hops_per_call']}"
        f" ({'; '.join(r['call_hops'])})",
        highlight=False,
    )
    console.print(
        f"supervisor commits per call: {r['commits_per_call']:g} in the burst"
        f" ({r['frames_per_call']:g} frames), {r['unloaded_commits_per_call']:g} one at a"
        f" time; warm-up call (launches the app) {r['warmup_call_ms']:.0f} ms;"
        f" targets on 2 cores; load {r['loadavg_1m']}",
        highlight=False,
    )
