"""Turning the rounds of `lineup bench apps` into the result record (`--json`) and the table.

Each line is the runtime's figure (median and max over the rounds), the bare baseline
measured in the same run, and their ratio. Three figures have targets: a launch forked from
the app zygote within 50 ms and at most a tenth of an exec'd launch, and an app's PSS (its
share of the pages it shares with the app zygote and the other apps) within 10 MiB.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from rich.console import Console
from rich.table import Table

from ._e2e_report import mark, verdict

# record key → the rounds it summarises
TIMED = {
    "verify": "verify",
    "verify_bare": "verify_bare",
    "install": "install",
    "remove": "remove",
    "launch": "launch",
    "launch_exec": "launch_exec",
    "launch_bare_fork": "bare_fork",
    "launch_bare_exec": "bare_exec",
    "close": "close",
    "restart": "restart",
    "restart_exec": "restart_exec",
}
# ratio key → (numerator, denominator) record keys
RATIOS = {
    "verify_ratio": ("verify_ms", "verify_bare_ms"),
    "install_to_verify_ratio": ("install_ms", "verify_ms"),
    "launch_ratio": ("launch_ms", "launch_bare_fork_ms"),
    "launch_to_exec_ratio": ("launch_ms", "launch_exec_ms"),
    "launch_exec_ratio": ("launch_exec_ms", "launch_bare_exec_ms"),
    "restart_to_exec_ratio": ("restart_ms", "restart_exec_ms"),
    "rss_ratio": ("app_rss_mib", "actor_rss_mib"),
    "pss_ratio": ("app_pss_mib", "actor_pss_mib"),
    "pss_to_exec_ratio": ("app_pss_mib", "app_exec_pss_mib"),
}
TARGET_LAUNCH_MS = 50.0
TARGET_LAUNCH_TO_EXEC = 0.1
TARGET_APP_PSS_MIB = 10.0


def _r(value: float, digits: int = 3) -> float:
    return round(value, digits)


def result_record(
    *,
    settings: dict[str, Any],
    rounds_ms: dict[str, list[float]],
    memory: dict[str, dict[str, float]],
) -> dict[str, Any]:
    """Every figure under a stable key: `X_ms` the median of the rounds, `X_max_ms` the
    max; the memory in MiB (`memory`: whose → its RSS and PSS); the ratios; the targets;
    and each round's times under `rounds_ms`."""
    record: dict[str, Any] = dict(settings)
    for key, source in TIMED.items():
        values = rounds_ms[source]
        record[f"{key}_ms"] = _r(median(values))
        record[f"{key}_max_ms"] = _r(max(values))
    for who, figures in memory.items():
        record[f"{who}_rss_mib"] = _r(figures["rss_mib"], 1)
        record[f"{who}_pss_mib"] = _r(figures["pss_mib"], 1)
    for key, (numerator, denominator) in RATIOS.items():
        record[key] = _r(record[numerator] / record[denominator], 2)
    record["targets"] = {
        "launch_ms": verdict(record["launch_ms"], "<=", TARGET_LAUNCH_MS),
        "launch_to_exec_ratio": verdict(
            record["launch_to_exec_ratio"], "<=", TARGET_LAUNCH_TO_EXEC
        ),
        "app_pss_mib": verdict(record["app_pss_mib"], "<=", TARGET_APP_PSS_MIB),
    }
    record["rounds_ms"] = {k: [_r(v, 2) for v in values] for k, values in rounds_ms.items()}
    return record


def _timed(record: dict[str, Any], key: str) -> str:
    return f"{record[f'{key}_ms']:,.1f} / {record[f'{key}_max_ms']:,.1f}"


def _ratio(value: float) -> str:
    return f"{value:,.2f}x"


def print_table(record: dict[str, Any], console: Console) -> None:
    r = record
    t = r["targets"]
    table = Table(
        title=f"lineup bench apps — {r['rounds']} rounds each; the {r['app_scope']} bundle"
        f" ({r['bundle_bytes']:,} bytes); isolation {r['app_isolation']} (launch:"
        f" {r['app_launch']}), exec'd {r['app_exec_isolation']} ({r['app_exec_launch']})",
        title_justify="left",
    )
    for column, justify in [
        ("measure", "left"),
        ("runtime, ms (med / max)", "right"),
        ("baseline, this run (med / max)", "right"),
        ("ratio", "right"),
        ("target", "left"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_row(
        "(1) verify bundle",
        _timed(r, "verify"),
        f"sha256 + Ed25519 {_timed(r, 'verify_bare')}",
        _ratio(r["verify_ratio"]),
    )
    table.add_row(
        "(2) install",
        _timed(r, "install"),
        f"verify {r['verify_ms']:,.1f}",
        _ratio(r["install_to_verify_ratio"]),
    )
    table.add_row("    remove --yes", _timed(r, "remove"), "", "")
    table.add_row(
        "(3) launch, forked from the app zygote",
        _timed(r, "launch"),
        f"bare fork {_timed(r, 'launch_bare_fork')}",
        _ratio(r["launch_ratio"]),
        f"<= {TARGET_LAUNCH_MS:g} ms {mark(t['launch_ms'])}",
    )
    table.add_row(
        "    launch, exec'd",
        _timed(r, "launch_exec"),
        f"bare exec {_timed(r, 'launch_bare_exec')}",
        _ratio(r["launch_exec_ratio"]),
    )
    table.add_row(
        "    forked / exec'd",
        "",
        "",
        _ratio(r["launch_to_exec_ratio"]),
        f"<= {TARGET_LAUNCH_TO_EXEC:g}x {mark(t['launch_to_exec_ratio'])}",
    )
    table.add_row("    close", _timed(r, "close"), "", "")
    table.add_row(
        "(4) restart after SIGKILL, forked",
        _timed(r, "restart"),
        f"exec'd {_timed(r, 'restart_exec')}",
        _ratio(r["restart_to_exec_ratio"]),
    )
    table.add_row(
        "(5) app RSS, MiB",
        f"{r['app_rss_mib']:.1f}",
        f"{r['actor']} {r['actor_rss_mib']:.1f}; exec'd app {r['app_exec_rss_mib']:.1f}",
        _ratio(r["rss_ratio"]),
    )
    table.add_row(
        "    app PSS, MiB",
        f"{r['app_pss_mib']:.1f}",
        f"{r['actor']} {r['actor_pss_mib']:.1f}; exec'd app {r['app_exec_pss_mib']:.1f}",
        _ratio(r["pss_ratio"]),
        f"<= {TARGET_APP_PSS_MIB:g} MiB {mark(t['app_pss_mib'])}",
    )
    console.print(table)
    before, after = r["loadavg_1m"]
    poll = r["poll_interval_ms"]
    console.print(
        f"[dim]{r['cpus']} CPUs, Python {r['python']}; load average {before:.2f} before the"
        f" run ({after:.2f} at its end). Install, remove, launch and close: request → the"
        f" operation's row `succeeded` in runtime.db; restart: kill → `running` with a new"
        f" pid on the control socket; both polled every {poll:g} ms (plus ≈1 ms per poll)."
        " Bare fork: a fork of an interpreter with the SDK loaded, until the child runs;"
        " bare exec: a new interpreter running `import apps.sdk`. The exec'd figures come"
        " from a second runtime whose apps are exec'd, started once the first had stopped."
        " Restart backoff is zeroed (policy, not mechanism); a forked actor's restart is in"
        " `lineup bench kernel`.[/dim]"
    )
