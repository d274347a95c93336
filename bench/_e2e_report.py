"""`lineup bench e2e`'s result record (`--json`) and its table, with the end-to-end targets."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

PACED_RATE = 100.0
TARGET_CATCHUP = 10_000.0  # msg/s
TARGET_P50_MS = 2.0
TARGET_P99_MS = 20.0
TARGET_COLD_S = 2.0
TARGET_RSS_MIB = 350.0
TARGET_IDLE_CPU_PCT = 0.1  # of one core, every runtime process together
TARGET_IDLE_WAKEUPS = 1.0  # a second, every thread of every runtime process together


def _r(value: float, digits: int = 3) -> float:
    return round(value, digits)


def result_record(
    *, settings: dict[str, Any], cold: dict[str, Any], bare: dict[str, Any], ours: dict[str, Any]
) -> dict[str, Any]:
    """Every figure under a stable key; `baseline_*` is (a), the bare WebSocket."""
    record: dict[str, Any] = {
        **settings,
        "live_msgs_per_s": round(ours["burst"].msgs_per_s),
        "baseline_live_msgs_per_s": round(bare["burst"].msgs_per_s),
        "live_p50_ms": _r(ours["paced"].p(50)),
        "live_p99_ms": _r(ours["paced"].p(99)),
        "baseline_live_p50_ms": _r(bare["paced"].p(50)),
        "baseline_live_p99_ms": _r(bare["paced"].p(99)),
        "burst_p50_ms": _r(ours["burst"].p(50), 1),
        "baseline_burst_p50_ms": _r(bare["burst"].p(50), 1),
        "catchup_msgs_per_s": round(ours["catchup"].msgs_per_s),
        "catchup_s": _r(ours["catchup"].seconds),
        "baseline_catchup_msgs_per_s": round(bare["catchup"].msgs_per_s),
        "baseline_catchup_s": _r(bare["catchup"].seconds),
        "restart_to_sync_s": _r(ours["restart_to_sync_s"]),
        "cold_start_s": _r(cold["seconds"]),
        "cold_start_rss_mib": _r(cold["memory"]["rss_mib"], 1),
        "total_rss_mib": _r(ours["memory"]["rss_mib"], 1),
        "total_pss_mib": _r(ours["memory"]["pss_mib"], 1),
        "runtime_processes": ours["memory"]["processes"],
        "baseline_appserver_rss_mib": _r(bare["memory"]["rss_mib"], 1),
        "idle_cpu_pct": _r(cold["idle"]["cpu_pct"]),
        "idle_wakeups_per_s": _r(cold["idle"]["wakeups_per_s"]),
        "idle_after_catchup_cpu_pct": _r(ours["idle_after_catchup"]["cpu_pct"]),
        "idle_after_catchup_wakeups_per_s": _r(ours["idle_after_catchup"]["wakeups_per_s"]),
    }
    record["targets"] = {
        "catchup_msgs_per_s": verdict(record["catchup_msgs_per_s"], ">=", TARGET_CATCHUP),
        "live_p50_ms": verdict(record["live_p50_ms"], "<=", TARGET_P50_MS),
        "live_p99_ms": verdict(record["live_p99_ms"], "<=", TARGET_P99_MS),
        "cold_start_s": verdict(record["cold_start_s"], "<=", TARGET_COLD_S),
        "total_rss_mib": verdict(record["total_rss_mib"], "<=", TARGET_RSS_MIB),
        "idle_cpu_pct": verdict(record["idle_cpu_pct"], "<=", TARGET_IDLE_CPU_PCT),
        "idle_wakeups_per_s": verdict(record["idle_wakeups_per_s"], "<=", TARGET_IDLE_WAKEUPS),
    }
    return record


def verdict(value: float, op: str, target: float) -> dict[str, Any]:
    """A figure against its target, as the reports print it and `--json` keeps it."""
    met = value >= target if op == ">=" else value <= target
    return {"target": f"{op} {target:g}", "met": met}


def mark(verdict: dict[str, Any]) -> str:
    return "[green]met[/green]" if verdict["met"] else "[red]not met[/red]"


def print_table(record: dict[str, Any], console: Console) -> None:
    t = record["targets"]
    table = Table(
        title=f"lineup bench e2e — {record['messages']:,} burst, {record['paced_messages']:,}"
        f" paced at {record['paced_rate']:g} msg/s, backlog {record['backlog']:,}",
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
    r = record
    table.add_row(
        "live burst, msg/s", f"{r['live_msgs_per_s']:,}", f"{r['baseline_live_msgs_per_s']:,}"
    )
    table.add_row(
        "live p50 at 100 msg/s, ms",
        f"{r['live_p50_ms']:.2f}",
        f"{r['baseline_live_p50_ms']:.2f}",
        f"<= {TARGET_P50_MS:g} ms",
        mark(t["live_p50_ms"]),
    )
    table.add_row(
        "live p99 at 100 msg/s, ms",
        f"{r['live_p99_ms']:.2f}",
        f"{r['baseline_live_p99_ms']:.2f}",
        f"<= {TARGET_P99_MS:g} ms",
        mark(t["live_p99_ms"]),
    )
    table.add_row(
        f"catch-up of {r['backlog']:,}, msg/s",
        f"{r['catchup_msgs_per_s']:,} ({r['catchup_s']:.1f} s)",
        f"{r['baseline_catchup_msgs_per_s']:,} ({r['baseline_catchup_s']:.1f} s)",
        f">= {TARGET_CATCHUP:,.0f} msg/s",
        mark(t["catchup_msgs_per_s"]),
    )
    table.add_row(
        "cold start lineup run → online, s",
        f"{r['cold_start_s']:.2f}",
        "",
        f"<= {TARGET_COLD_S:g} s",
        mark(t["cold_start_s"]),
    )
    table.add_row(
        "total RSS (PSS), MiB",
        f"{r['total_rss_mib']:.0f} ({r['total_pss_mib']:.0f}), {r['runtime_processes']} procs",
        f"AppServer {r['baseline_appserver_rss_mib']:.0f}",
        f"<= {TARGET_RSS_MIB:g} MiB",
        mark(t["total_rss_mib"]),
    )
    table.add_row(
        f"idle {r['idle_s']:g} s after start: CPU, % of one core",
        f"{r['idle_cpu_pct']:.3f}",
        "",
        f"<= {TARGET_IDLE_CPU_PCT:g} %",
        mark(t["idle_cpu_pct"]),
    )
    table.add_row(
        "  its wake-ups a second, all threads",
        f"{r['idle_wakeups_per_s']:.2f}",
        "",
        f"<= {TARGET_IDLE_WAKEUPS:g}",
        mark(t["idle_wakeups_per_s"]),
    )
    table.add_row(
        f"idle {r['idle_s']:g} s after the catch-up: CPU %, wake-ups/s",
        f"{r['idle_after_catchup_cpu_pct']:.3f}, {r['idle_after_catchup_wakeups_per_s']:.2f}",
        "",
        "",
        "",
    )
    console.print(table)
    console.print(
        f"restart → syncing {r['restart_to_sync_s']:.2f} s; burst p50 {r['burst_p50_ms']:.0f} ms"
        f" (bare {r['baseline_burst_p50_ms']:.0f} ms); load {r['loadavg_1m']}",
        highlight=False,
    )
