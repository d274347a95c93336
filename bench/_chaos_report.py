"""The record `lineup bench chaos` prints: the checker's counts, the faults by kind, the
workload's size and how long the paths took to deliver again after each fault."""

from __future__ import annotations

import bisect
from typing import Any

from rich.console import Console
from rich.table import Table

from ._envelope import percentile

DIRECTIONS = ("agent_to_user", "user_to_agent")


def recovery_ms(faults: list[tuple[int, str]], delivered_ns: list[int]) -> dict[str, list[float]]:
    """For each fault (when, kind), the time to the first agent message the chat applied
    after it: the path from the agent to the user delivering again; by the fault's kind.
    Faults after the last delivery have none."""
    delivered = sorted(delivered_ns)
    waits: dict[str, list[float]] = {}
    for at, kind in sorted(faults):
        later = bisect.bisect_right(delivered, at)
        if later < len(delivered):
            waits.setdefault(kind, []).append((delivered[later] - at) / 1e6)
    return waits


def _percentiles(waits: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(waits, 50), 1),
        "p99": round(percentile(waits, 99), 1),
        "max": round(max(waits), 1),
    }


def result_record(
    *,
    settings: dict[str, Any],
    counts: dict[str, Any],
    faults: dict[str, int],
    fault_log: list[dict[str, Any]],
    recoveries_ms: dict[str, list[float]],
    workload: dict[str, Any],
) -> dict[str, Any]:
    every = [wait for waits in recoveries_ms.values() for wait in waits]
    return {
        "minutes": settings["minutes"],
        "seed": settings["seed"],
        "faults": faults,
        "faults_total": sum(faults.values()),
        "agent_to_user": counts["agent_to_user"],
        "user_to_agent": counts["user_to_agent"],
        "tool_calls": counts["tool_calls"],
        "in_doubt": counts["in_doubt"],
        "failed": counts["failed"],
        "recovery_p50_ms": round(percentile(every, 50), 1) if every else None,
        "recovery_p99_ms": round(percentile(every, 99), 1) if every else None,
        "recovery_by_kind_ms": {
            kind: _percentiles(waits) for kind, waits in sorted(recoveries_ms.items())
        },
        "workload": workload,
        "settings": settings,
        "fault_log": fault_log,
    }


def with_power_cuts(record: dict[str, Any], cuts: list[dict[str, Any]]) -> dict[str, Any]:
    """`record` with the power cuts' keys: how many, the contract's violations and the
    damaged files found after them (each must be zero), and each cut's log."""
    violations = sum(len(cut["violations"]) for cut in cuts)
    damaged = sum(len(cut["damaged"]) for cut in cuts)
    failed = [*record["failed"]]
    failed += ["contract_violations"] if violations else []
    failed += ["corrupt_files"] if damaged else []
    return {
        **record,
        "power_cuts": len(cuts),
        "contract_violations": violations,
        "corrupt_files": damaged,
        "failed": failed,
        "power_cut_log": cuts,
    }


def print_table(record: dict[str, Any], console: Console) -> None:
    verdict = "[green]passed[/green]" if not record["failed"] else "[red]FAILED[/red]"
    length = (
        f"{record['power_cuts']} power cuts"
        if "power_cuts" in record
        else f"{record['minutes']:g} min, {record['faults_total']} faults"
    )
    console.print(f"chaos soak: {length}, seed {record['seed']}: {verdict}", highlight=False)
    faults = Table(
        "fault", "injected", "recovery p50 ms", "p99 ms", "max ms", title="faults by kind"
    )
    for kind, count in record["faults"].items():
        waits = record["recovery_by_kind_ms"].get(kind)
        times = [f"{waits[k]:,.0f}" for k in ("p50", "p99", "max")] if waits else ["-"] * 3
        faults.add_row(kind, str(count), *times)
    console.print(faults)
    messages = Table("direction", "sent", "delivered", "lost", "duplicated", "reordered")
    for direction in DIRECTIONS:
        row = record[direction]
        messages.add_row(
            direction.replace("_", " "),
            *(str(row[k]) for k in ("sent", "delivered", "lost", "duplicated", "reordered")),
        )
    console.print(messages)
    calls = record["tool_calls"]
    console.print(
        f"tool calls: {calls['sent']} sent, {calls['one_final']} with one final outcome,"
        f" {calls['none']} with none, {calls['several']} with several;"
        f" capability effects in doubt: {record['in_doubt']}",
        highlight=False,
    )
    if record["recovery_p50_ms"] is not None:
        console.print(
            f"recovery (fault → agent → user delivering again): p50"
            f" {record['recovery_p50_ms']:,.0f} ms, p99 {record['recovery_p99_ms']:,.0f} ms",
            highlight=False,
        )
    if "power_cuts" in record:
        _print_cuts(record, console)
    for name in record["failed"]:
        console.print(f"[red]not zero:[/red] {name}", highlight=False)


def _print_cuts(record: dict[str, Any], console: Console) -> None:
    restarts = [c["restart_s"] for c in record["power_cut_log"] if c["restart_s"] is not None]
    console.print(
        f"after {record['power_cuts']} power cuts: {record['contract_violations']} broken"
        f" promises, {record['corrupt_files']} damaged files"
        + (f"; back online in {percentile(restarts, 50):.1f} s (median)" if restarts else ""),
        highlight=False,
    )
    for cut in record["power_cut_log"]:
        for problem in [*cut["violations"], *cut["damaged"]]:
            console.print(f"  [red]{cut['moment']} cut:[/red] {problem}", highlight=False)
