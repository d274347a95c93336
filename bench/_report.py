"""Turning the runs into the result record (`--json`) and the table people read.

The targets are the kernel's, for a 2-core machine. The reference column quotes the best
this hardware class does (bare code, medians of 3 runs) only for orientation: the verdicts
are taken against this run's own baselines (a) and (b), because absolute figures on shared
machines drift 15-25 % between runs.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from rich.console import Console
from rich.table import Table

from ._paths import Run

TARGET_RATIO = 0.8
TARGET_P50_MS = 1.0
TARGET_RESTART_P50_MS = 300.0
TARGET_RSS_MIB = 40.0
TARGET_AUTHZ_RATIO = 0.95  # the door (senders checked, bodies validated) costs at most 5 %

# The best this hardware class does with bare code, medians of 3 runs.
REFERENCE: dict[str, Any] = {
    "bare_msgs_per_s": 305_000,
    "bare_p50_ms": 0.121,
    "bare_p99_ms": 0.239,
    "durable_msgs_per_s": {"FULL": 44_800, "NORMAL": 56_600},
    "durable_p50_ms": {"FULL": 0.62, "NORMAL": 0.30},
    "durable_p99_ms": {"FULL": 1.6, "NORMAL": 2.8},
    "fresh_actor_start_ms": 238,
    "fresh_actor_rss_mib": 38.5,
    "fresh_actor_pss_mib": 33.8,
}


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def result_record(
    *,
    settings: dict[str, Any],
    bare: list[Run],
    relay: list[Run],
    kernel: list[Run],
    unchecked: list[Run],
    paced: dict[str, Run],
    restarts_ms: list[float],
    replayed: int,
    memory: dict[str, float | None],
) -> dict[str, Any]:
    """Everything the bench measured, under stable keys (throughputs: median of rounds)."""
    from ._envelope import percentile

    kernel_rate = median(r.msgs_per_s for r in kernel)
    relay_rate = median(r.msgs_per_s for r in relay)
    ratio = kernel_rate / relay_rate
    unchecked_rate = median(r.msgs_per_s for r in unchecked)
    authz_ratio = kernel_rate / unchecked_rate
    record: dict[str, Any] = {
        **settings,
        "kernel_msgs_per_s": round(kernel_rate),
        "durable_baseline_msgs_per_s": round(relay_rate),
        "bare_socketpair_msgs_per_s": round(median(r.msgs_per_s for r in bare)),
        "ratio_vs_durable_baseline": round(ratio, 3),
        "p50_ms": _r(paced["kernel"].p(50)),
        "p99_ms": _r(paced["kernel"].p(99)),
        "unchecked_msgs_per_s": round(unchecked_rate),
        "unchecked_p50_ms": _r(paced["unchecked"].p(50)),
        "unchecked_p99_ms": _r(paced["unchecked"].p(99)),
        "authz_ratio": round(authz_ratio, 3),
        "baseline_p50_ms": _r(paced["relay"].p(50)),
        "baseline_p99_ms": _r(paced["relay"].p(99)),
        "bare_socketpair_p50_ms": _r(paced["bare"].p(50)),
        "bare_socketpair_p99_ms": _r(paced["bare"].p(99)),
        "restart_p50_ms": _r(percentile(restarts_ms, 50), 1),
        "restart_p99_ms": _r(percentile(restarts_ms, 99), 1),
        "restart_max_ms": _r(max(restarts_ms), 1),
        "restarts_measured": len(restarts_ms),
        "restarts_first_message_was_replay": replayed,
        "actor_rss_mib": _r(memory["rss_mib"], 1),
        "actor_pss_mib": _r(memory["pss_mib"], 1),
        "kernel_msgs_per_commit": _r(_per_commit(kernel), 1),
        "durable_baseline_msgs_per_commit": _r(_per_commit(relay), 1),
        "rounds_msgs_per_s": {
            "bare_socketpair": [round(r.msgs_per_s) for r in bare],
            "durable_baseline": [round(r.msgs_per_s) for r in relay],
            "kernel": [round(r.msgs_per_s) for r in kernel],
            "kernel_unchecked": [round(r.msgs_per_s) for r in unchecked],
        },
    }
    full = settings["synchronous"] == "FULL"
    record["targets"] = {
        "ratio_vs_durable_baseline": _verdict(ratio, ">=", TARGET_RATIO, applies=full),
        "p50_ms": _verdict(record["p50_ms"], "<=", TARGET_P50_MS),
        "authz_ratio": _verdict(authz_ratio, ">=", TARGET_AUTHZ_RATIO),
        "restart_p50_ms": _verdict(record["restart_p50_ms"], "<=", TARGET_RESTART_P50_MS),
        "actor_rss_mib": _verdict(record["actor_rss_mib"], "<=", TARGET_RSS_MIB),
    }
    return record


def _per_commit(runs: list[Run]) -> float | None:
    values = [r.per_commit for r in runs if r.per_commit is not None]
    return median(values) if values else None


def _verdict(value: float, op: str, target: float, *, applies: bool = True) -> dict[str, Any]:
    met = value >= target if op == ">=" else value <= target
    return {"target": f"{op} {target:g}", "met": met, "applies": applies}


def _mark(verdict: dict[str, Any]) -> str:
    text = "[green]met[/green]" if verdict["met"] else "[red]not met[/red]"
    return text if verdict["applies"] else f"{text} [dim](target is for FULL)[/dim]"


def _n(value: float) -> str:
    return f"{value:,.0f}"


def print_table(record: dict[str, Any], console: Console) -> None:
    sync = record["synchronous"]
    ref = REFERENCE
    t = record["targets"]
    table = Table(
        title=f"lineup bench kernel — synchronous={sync}, {record['messages']:,} messages"
        f" x {record['rounds']} rounds, {record['paced_messages']:,} paced at"
        f" {record['paced_rate']:,.0f} msg/s, {record['restarts_measured']} kills",
        title_justify="left",
    )
    for column, justify in [
        ("measure", "left"),
        ("kernel (c)", "right"),
        ("baseline, this run", "right"),
        ("hardware best", "right"),
        ("target", "left"),
        ("verdict", "left"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_row(
        "throughput, msg/s",
        _n(record["kernel_msgs_per_s"]),
        f"(b) {_n(record['durable_baseline_msgs_per_s'])}",
        _n(ref["durable_msgs_per_s"].get(sync, 0)),
        "",
        "",
    )
    kernel_pc, relay_pc = (
        record["kernel_msgs_per_commit"],
        record["durable_baseline_msgs_per_commit"],
    )
    if kernel_pc and relay_pc:
        table.add_row("messages per commit", f"{kernel_pc:.1f}", f"(b) {relay_pc:.1f}", "", "", "")
    table.add_row(
        "ratio (c) / (b)",
        f"{record['ratio_vs_durable_baseline']:.3f}",
        "",
        "",
        f">= {TARGET_RATIO} with FULL",
        _mark(t["ratio_vs_durable_baseline"]),
    )
    table.add_row(
        "door on / off, msg/s",
        f"{_n(record['kernel_msgs_per_s'])} / {_n(record['unchecked_msgs_per_s'])}",
        f"p50 {record['p50_ms']:.3f} / {record['unchecked_p50_ms']:.3f} ms",
        "",
        "",
        "",
    )
    table.add_row(
        "ratio door on / off",
        f"{record['authz_ratio']:.3f}",
        "",
        "",
        f">= {TARGET_AUTHZ_RATIO}",
        _mark(t["authz_ratio"]),
    )
    table.add_row(
        "bare A→B, msg/s",
        "",
        f"(a) {_n(record['bare_socketpair_msgs_per_s'])}",
        _n(ref["bare_msgs_per_s"]),
        "",
        "",
    )
    table.add_row(
        "p50 at 1k msg/s, ms",
        f"{record['p50_ms']:.3f}",
        f"(b) {record['baseline_p50_ms']:.3f}  (a) {record['bare_socketpair_p50_ms']:.3f}",
        f"{ref['durable_p50_ms'].get(sync, 0):.2f}",
        f"<= {TARGET_P50_MS:g} ms",
        _mark(t["p50_ms"]),
    )
    table.add_row(
        "p99 at 1k msg/s, ms",
        f"{record['p99_ms']:.3f}",
        f"(b) {record['baseline_p99_ms']:.3f}  (a) {record['bare_socketpair_p99_ms']:.3f}",
        f"{ref['durable_p99_ms'].get(sync, 0):.2f}",
        "",
        "",
    )
    table.add_row(
        "restart p50 / p99, ms",
        f"{record['restart_p50_ms']:.0f} / {record['restart_p99_ms']:.0f}",
        "",
        f"new process {ref['fresh_actor_start_ms']}",
        f"p50 <= {TARGET_RESTART_P50_MS:g} ms",
        _mark(t["restart_p50_ms"]),
    )
    pss = record["actor_pss_mib"]
    table.add_row(
        "idle actor RSS (PSS), MiB",
        f"{record['actor_rss_mib']:.1f}" + (f" ({pss:.1f})" if pss is not None else ""),
        "",
        f"{ref['fresh_actor_rss_mib']} ({ref['fresh_actor_pss_mib']})",
        f"<= {TARGET_RSS_MIB:g} MiB",
        _mark(t["actor_rss_mib"]),
    )
    console.print(table)
    rounds = record["rounds_msgs_per_s"]
    before, after = record["loadavg_1m"]
    console.print(
        f"[dim]{record['filesystem']}, {record['cpus']} CPUs; load average {before:.2f} before"
        f" the run ({after:.2f} at its end, the bench's own processes included): other work"
        " on the machine shows in every figure.[/dim]"
    )
    console.print(
        "[dim]throughput per round (median shown above): "
        + "; ".join(f"{k} {', '.join(_n(v) for v in vals)}" for k, vals in rounds.items())
        + "[/dim]"
    )
