"""`lineup bench web`'s result record (`--json`) and its table, with the web host's target."""

from __future__ import annotations

import statistics
from typing import Any

from rich.console import Console
from rich.table import Table

from ._e2e_flow import Window
from ._e2e_report import mark
from ._envelope import percentile

FRAME_MS = 16.0  # one frame at 60 Hz: what the page may add to the runtime's own latency
STAGE_MS = 50.0  # what the page may add to the runtime's launch of an app it puts on stage
RECORD_TIMES = 2.0  # a recording kept, in bare uploads of its bytes through the web host


def _r(value: float, digits: int = 2) -> float:
    return round(value, digits)


def result_record(
    *,
    settings: dict[str, Any],
    page: Window,
    chat: Window,
    web_legs_ms: list[float],
    ready_ms: list[float],
    memory: dict[str, float],
    clock: dict[str, float],
    stage: dict[str, list[float]],
    recordings: dict[str, list[float]],
) -> dict[str, Any]:
    """Every figure under a stable key: `render_*` agent → the page's DOM, `runtime_*`
    agent → the chat app's log, for the same messages of the same run."""
    record: dict[str, Any] = {
        **settings,
        "render_p50_ms": _r(page.p(50)),
        "render_p99_ms": _r(page.p(99)),
        "runtime_p50_ms": _r(chat.p(50)),
        "runtime_p99_ms": _r(chat.p(99)),
        # Per message, the chat's log → the page: the web host's and the browser's part.
        "log_to_page_p50_ms": _r(percentile(web_legs_ms, 50)),
        "log_to_page_p99_ms": _r(percentile(web_legs_ms, 99)),
        "page_ready_ms": _r(statistics.median(ready_ms), 1),
        "page_ready_max_ms": _r(max(ready_ms), 1),
        "web_rss_mib": _r(memory["rss_mib"], 1),
        "web_pss_mib": _r(memory["pss_mib"], 1),
        # Agent's call → the app's frame on the stage, and → the runtime's launch done.
        "stage_ready_ms": _r(statistics.median(stage["stage_ready_ms"]), 1),
        "stage_ready_max_ms": _r(max(stage["stage_ready_ms"]), 1),
        "runtime_launch_ms": _r(statistics.median(stage["runtime_launch_ms"]), 1),
        # The user's Stop → the recording kept as the app's artifact, and a bare upload of
        # the same bytes through the same web host.
        "record_to_artifact_ms": _r(statistics.median(recordings["record_to_artifact_ms"]), 1),
        "record_to_artifact_max_ms": _r(max(recordings["record_to_artifact_ms"]), 1),
        "record_page_ms": _r(statistics.median(recordings["record_page_ms"]), 1),
        "bare_upload_ms": _r(statistics.median(recordings["bare_upload_ms"]), 1),
        "clock_offset_ms": _r(clock["offset_ms"], 3),
        "clock_offset_bound_ms": _r(clock["bound_ms"], 3),
    }
    limit = record["runtime_p50_ms"] + FRAME_MS
    stage_limit = record["runtime_launch_ms"] + STAGE_MS
    record_limit = record["bare_upload_ms"] * RECORD_TIMES
    record["targets"] = {
        "render_p50_ms": {
            "target": f"<= runtime_p50_ms + {FRAME_MS:g} ({limit:.2f})",
            "met": record["render_p50_ms"] <= limit,
        },
        "stage_ready_ms": {
            "target": f"<= runtime_launch_ms + {STAGE_MS:g} ({stage_limit:.1f})",
            "met": record["stage_ready_ms"] <= stage_limit,
        },
        "record_to_artifact_ms": {
            "target": f"<= {RECORD_TIMES:g} x bare_upload_ms ({record_limit:.1f})",
            "met": record["record_to_artifact_ms"] <= record_limit,
        },
    }
    return record


def print_table(record: dict[str, Any], console: Console) -> None:
    r = record
    table = Table(
        title=f"lineup bench web — {r['messages']:,} agent messages at {r['rate']:g} msg/s,"
        f" {r['loads']} page loads, {r['launches']} launches, {r['recordings']} recordings;"
        f" {r['date']}, {r['cpus']} CPUs,"
        f" Python {r['python']},"
        f" Chromium {r['chromium']}",
        title_justify="left",
    )
    for column, justify in [
        ("measure", "left"),
        ("the page (DOM)", "right"),
        ("runtime: the chat app's log", "right"),
        ("target", "left"),
        ("verdict", "left"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_row(
        "agent → visible p50, ms",
        f"{r['render_p50_ms']:.2f}",
        f"{r['runtime_p50_ms']:.2f}",
        r["targets"]["render_p50_ms"]["target"],
        mark(r["targets"]["render_p50_ms"]),
    )
    table.add_row(
        "agent → visible p99, ms", f"{r['render_p99_ms']:.2f}", f"{r['runtime_p99_ms']:.2f}"
    )
    table.add_row(
        "the chat's log → the page p50 (p99), ms",
        f"{r['log_to_page_p50_ms']:.2f} ({r['log_to_page_p99_ms']:.2f})",
    )
    table.add_row(
        "page load → ready, median (max), ms",
        f"{r['page_ready_ms']:.1f} ({r['page_ready_max_ms']:.1f})",
    )
    table.add_row(
        "agent's call → the app on the stage, median (max), ms",
        f"{r['stage_ready_ms']:.1f} ({r['stage_ready_max_ms']:.1f})",
        f"{r['runtime_launch_ms']:.1f}",
        r["targets"]["stage_ready_ms"]["target"],
        mark(r["targets"]["stage_ready_ms"]),
    )
    table.add_row(
        "the user's Stop → the recording kept, median (max), ms",
        f"{r['record_to_artifact_ms']:.1f} ({r['record_to_artifact_max_ms']:.1f})",
        f"{r['bare_upload_ms']:.1f} (bare upload)",
        r["targets"]["record_to_artifact_ms"]["target"],
        mark(r["targets"]["record_to_artifact_ms"]),
    )
    table.add_row(
        "of which the page: Stop → the upload sent, median, ms", f"{r['record_page_ms']:.1f}"
    )
    table.add_row("web host RSS (PSS), MiB", f"{r['web_rss_mib']:.1f} ({r['web_pss_mib']:.1f})")
    console.print(table)
    console.print(
        f"the page's clock minus the bench's: {r['clock_offset_ms']:+.3f} ms"
        f" (± {r['clock_offset_bound_ms']:.3f}); load {r['loadavg_1m']}",
        highlight=False,
    )
