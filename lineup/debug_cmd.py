"""`lineup debug ...`: look inside a runtime, live through its control socket, or, when it is
stopped, through a read-only view of its mailbox file.

Tables show states in colour (none with NO_COLOR set or when the output is not a
terminal), durations and local times for people; `--json` keeps the raw values (seconds,
Unix times).

`lineup debug status | usage | actors | mailbox NAME | dead | why ID | redrive ID | kill NAME
| send NAME TYPE | trace`, each with `--json` and `--data-dir`. `usage` reads the data dir
read-only, the runtime up or stopped (`lineup/data_dir_usage.py`): the size of each part
and of each table of both databases, each beside its bound and rule. `status` adds
`disk_warning`, one sentence saying what to do, when the data dir takes over half of its
file system, and says where the AppServer token is held (`token`). `mailbox --body` shows a
long body below the table; an empty mailbox says "nothing waiting". With the runtime
stopped (no holder of `supervisor.lock`, which holds the holder's pid), the read commands
open `mailbox.db` read-only and say that they show saved state. `trace` prints the
supervisor's lifecycle record first, then frames and lifecycle events as they happen. `why`
follows one message through every file (`_debug_why`)."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

from actors.kernel import (
    ControlError,
    MailboxStore,
    control_request,
    control_stream,
    mailbox_counts,
    mailbox_listing,
    mailbox_names,
    supervisor_pid_alive,
)

from ._common import add_data_dir, data_dir_of, fail, print_json, visible

ACTOR_COLUMNS = [
    "name",
    "pid",
    "state",
    "restarts",
    "uptime_s",
    "rss_mib",
    "pss_mib",
    "pending",
    "inflight",
    "inflight_oldest_s",
    "dead",
]
MESSAGE_COLUMNS = ["id", "from", "type", "attempts", "failures", "state", "age_s", "error"]
# Column headings of the tables (the JSON keeps the field names).
HEADINGS = {
    "uptime_s": "uptime",
    "age_s": "age",
    "inflight_oldest_s": "oldest in flight",
    "rss_mib": "RSS MiB",
    "pss_mib": "PSS MiB",
}
STATE_STYLES = {
    "running": "green",
    "online": "green",
    "done": "green",
    "starting": "cyan",
    "created": "cyan",
    "restoring": "cyan",
    "pending": "cyan",
    "inflight": "yellow",
    "restarting": "yellow",
    "stopping": "yellow",
    "degraded": "bold yellow",
    "offline_degraded": "bold yellow",
    "unresponsive": "bold yellow",
    "stopped": "dim",
    "failed": "bold red",
    "dead": "red",
}
# Past this many characters a body is shown below its table, not in it.
BODY_INLINE = 40


def register(subparsers: Any) -> None:
    debug = subparsers.add_parser(
        "debug",
        help="inspect a runtime: actors, mailboxes, dead letters, one message, live trace",
        description=__doc__,
    )
    commands = debug.add_subparsers(dest="debug_command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = commands.add_parser(name, help=help, description=help)
        add_data_dir(parser)
        parser.add_argument("--json", action="store_true", help="print JSON, not a table")
        return parser

    command("status", "runtime state, uptime and why it is degraded").set_defaults(func=_status)
    command(
        "usage",
        "the size of every part, database and table of the data dir beside its bound and rule"
        " (runtime up or stopped)",
    ).set_defaults(func=_usage)
    actors = command(
        "actors", "every actor: pid, state (unresponsive if it misses heartbeats), mailbox depth"
    )
    actors.add_argument(
        "--stats",
        action="store_true",
        help="also ask each actor for its statistics, and show each app's own health report",
    )
    actors.set_defaults(func=_actors)
    mailbox = command("mailbox", "the messages waiting in one actor's mailbox")
    mailbox.add_argument("name", help="the actor (mailbox) name")
    mailbox.add_argument("--body", action="store_true", help="decode and show message bodies")
    mailbox.add_argument("--limit", type=int, default=100, help="most messages shown (default 100)")
    mailbox.set_defaults(func=_mailbox)
    dead = command("dead", "dead letters: messages that failed max_deliver times")
    dead.add_argument("--body", action="store_true", help="decode and show message bodies")
    dead.add_argument("--limit", type=int, default=100, help="most messages shown (default 100)")
    dead.set_defaults(func=_dead)
    why = command(
        "why",
        "follow one message: its hops between actors, attempts, replies, the store's and the"
        " app's records and the log lines that name it (runtime up or stopped)",
    )
    why.add_argument("id", help="a message id: a kernel message, an envelope or an outbox key")
    why.set_defaults(func=_why)
    redrive = command("redrive", "move a dead letter back to its mailbox, failures cleared")
    redrive.add_argument("id", help="the dead message's id")
    redrive.set_defaults(func=_redrive)
    kill = command("kill", "SIGKILL an actor's process (it restarts by its policy)")
    kill.add_argument("name", help="the actor to kill")
    kill.set_defaults(func=_kill)
    send = command(
        "send", "put a message into an actor's mailbox, as sender 'debug', and print its outcome"
    )
    send.add_argument("name", help="the recipient actor")
    send.add_argument("type", help="the message type")
    send.add_argument("--body", default="null", help="the body as JSON (default null)")
    send.add_argument(
        "--wait",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long to wait for the handler's outcome (default 5; 0: do not wait)",
    )
    send.set_defaults(func=_send)
    trace = command(
        "trace",
        "print what the supervisor has recorded of its actors (exits, restarts, failures),"
        " then frames and lifecycle events live (Ctrl-C ends)",
    )
    trace.add_argument("--actor", help="only frames from or to this actor")
    trace.add_argument("--type", dest="type_prefix", help="only message types with this prefix")
    trace.set_defaults(func=_trace)


# -- output ------------------------------------------------------------------------------


def _console() -> Console:
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:  # piped: do not squeeze tables into 80 columns
        console = Console(width=240, highlight=False)
    return console


def duration(seconds: Any) -> str:
    """`950 ms`, `12 s`, `3 m 05 s`, `2 h 10 m`, `3 d 04 h`; "" for None."""
    if not isinstance(seconds, int | float):
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} m {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} m"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours:02d} h"


def local_time(epoch: Any) -> str:
    """A Unix time as a local time: the clock alone today, with the date otherwise."""
    if not isinstance(epoch, int | float):
        return ""
    moment = time.localtime(epoch)
    if time.strftime("%Y-%m-%d", moment) == time.strftime("%Y-%m-%d"):
        return time.strftime("%H:%M:%S", moment)
    return time.strftime("%Y-%m-%d %H:%M:%S", moment)


def _text(value: Any, column: str = "") -> Any:
    """A table cell as rich Text: never read as markup, states coloured."""
    from rich.text import Text

    if value is None:
        return Text("")
    if column.endswith("_s"):
        return Text(duration(value))
    if isinstance(value, dict | list):
        value = json.dumps(value)
    text = visible(str(value))
    style = STATE_STYLES.get(text, "") if column in ("state", "lifecycle", "value") else ""
    return Text(text, style=style)


def _table(title: str, columns: list[str], rows: list[list[Any]], *, empty: str) -> None:
    from rich.table import Table

    console = _console()
    if not rows:
        console.print(f"{title}: {empty}", markup=False)
        return
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(HEADINGS.get(column, column), no_wrap=column != "error")
    for row in rows:
        table.add_row(*(_text(cell, column) for cell, column in zip(row, columns, strict=True)))
    console.print(table)


# -- commands ----------------------------------------------------------------------------


def _live(data_dir: Path) -> bool:
    return supervisor_pid_alive(data_dir)


def _offline_store(data_dir: Path) -> MailboxStore:
    path = data_dir / "mailbox.db"
    if not path.exists():
        raise ControlError(
            f"no runtime data in {data_dir} (no mailbox.db); point at the runtime's data dir"
            " with --data-dir DIR"
        )
    return MailboxStore(path, readonly=True)


def read_lifecycle(data_dir: Path) -> dict[str, Any] | None:
    """The last lifecycle state the transport reported to the store, read from
    `runtime.db` directly (read-only): the store's package is slow to import."""
    import sqlite3

    path = data_dir / "runtime.db"
    if not path.exists():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = db.execute(
            "SELECT state, detail, at_ms FROM lifecycle WHERE name = 'runtime'"
        ).fetchone()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    return {"state": row[0], "detail": row[1], "at_ms": row[2]} if row else None


def runtime_lifecycle(data_dir: Path, status: dict[str, Any]) -> str:
    """The runtime lifecycle: the supervisor's own states, else the connection
    state the transport last reported to the store."""
    if status.get("state") in ("stopping", "stopped"):
        return str(status["state"])
    if status.get("state") == "starting":
        return "created"
    record = read_lifecycle(data_dir)
    if record is None:
        return "created"
    started = status.get("started_at")
    if isinstance(started, int | float) and record["at_ms"] < started * 1000:
        return "restoring"  # a report of the previous run: this one has not said more yet
    return str(record["state"])


def _status(args: argparse.Namespace) -> int:
    data_dir = data_dir_of(args)
    if _live(data_dir):
        status = control_request(data_dir, {"type": "status"})
    else:
        store = _offline_store(data_dir)
        counts = mailbox_counts(store)
        store.close()
        status = {
            "state": "stopped",
            "pid": None,
            "uptime_s": None,
            "degraded": [],
            "mailboxes": len(counts),
        }
    status["lifecycle"] = runtime_lifecycle(data_dir, status)
    if status["lifecycle"] == "offline_degraded" and status["state"] in ("running", "degraded"):
        # Up, but not reaching the AppServer: the user's messages wait in the outbox.
        record = read_lifecycle(data_dir) or {}
        status["state"] = "degraded"
        offline = f"offline: {record.get('detail') or 'the AppServer cannot be reached'}"
        status["reason"] = "; ".join(filter(None, [status.get("reason"), offline]))
    from actors.runtime_token import token_home

    home = token_home(data_dir, os.environ)  # the keyring's or the file's: said, not read
    status["token"] = {"holder": home.holder, "detail": home.detail}
    from .data_dir_usage import share_warning

    warning = share_warning(data_dir)
    if warning:
        status["disk_warning"] = warning
    if args.json:
        print_json(status)
        return 0
    rows: list[list[Any]] = []
    for key, value in status.items():
        if key == "token":
            rows.append(["AppServer token", value["detail"]])
        elif key == "disk_warning":
            rows.append(["warning", value])
        elif key == "started_at":
            rows.append(["started", local_time(value)])
        elif key.endswith("_s"):
            rows.append([key[:-2], duration(value)])
        elif isinstance(value, list):
            rows.append([key, ", ".join(map(str, value)) or "none"])
        else:
            rows.append([key, value])
    _table(f"runtime in {data_dir}", ["field", "value"], rows, empty="no status")
    return 0


def _usage(args: argparse.Namespace) -> int:
    from .data_dir_usage import human_bytes, share_warning, usage

    data_dir = data_dir_of(args)
    if not (data_dir / "mailbox.db").exists():
        return fail(
            f"no runtime data in {data_dir} (no mailbox.db); point at the runtime's data dir"
            " with --data-dir DIR"
        )
    report = usage(data_dir)
    if args.json:
        print_json(report)
        return 0
    fs = report["file_system"]
    rows = [[p["part"], human_bytes(p["bytes"]), p["bound"], p["rule"]] for p in report["parts"]]
    _table(
        f"{data_dir}: {human_bytes(report['bytes'])}, on a disk of {human_bytes(fs['size'])}"
        f" with {human_bytes(fs['free'])} free",
        ["part", "size", "bound", "rule"],
        rows,
        empty="empty",
    )
    for database in report["databases"]:
        rows = [
            [t["table"], human_bytes(t["bytes"]), f"{t['rows']:,}", t["bound"], t["rule"]]
            for t in database["tables"]
        ]
        _table(
            f"{database['file']}: {human_bytes(database['bytes'])}",
            ["table", "size", "rows", "bound", "rule"],
            rows,
            empty="no tables",
        )
    warning = share_warning(data_dir)
    if warning:
        _console().print(f"warning: {warning}", markup=False)
    return 0


def _actors(args: argparse.Namespace) -> int:
    data_dir = data_dir_of(args)
    if _live(data_dir):
        actors = control_request(data_dir, {"type": "actors", "stats": args.stats})["actors"]
    else:
        store = _offline_store(data_dir)
        counts = mailbox_counts(store)
        zero = {"pending": 0, "inflight": 0, "dead": 0}
        actors = [
            {
                "name": name,
                "pid": None,
                "state": "stopped",
                "restarts": None,
                "uptime_s": None,
                **counts.get(name, zero),
            }
            for name in sorted({*mailbox_names(store), *counts})
        ]
        store.close()
    for actor in actors:
        actor.update(_memory(actor.get("pid")))
    if args.stats:
        _attach_diagnostics(data_dir, actors)
    if args.json:
        print_json(actors)
        return 0
    rows = [[a.get(c) for c in ACTOR_COLUMNS] + [_refused(a)] for a in actors]
    title = "actors" if _live(data_dir) else f"actors (saved state: no runtime on {data_dir})"
    _table(title, [*ACTOR_COLUMNS, "refused"], rows, empty="no actors")
    exits = [(a["name"], a["last_exit"]) for a in actors if a.get("last_exit")]
    for name, reason in exits:
        _console().print(f"{name} last exited: {reason}", markup=False)
    if args.stats:
        for actor in actors:
            if actor.get("statistics"):
                _console().print(
                    f"{actor['name']}: {json.dumps(actor['statistics'])}", markup=False
                )
            for line in _diagnostic_lines(actor):
                _console().print(visible(line), markup=False, soft_wrap=True)
    return 0


def _memory(pid: int | None) -> dict[str, float | None]:
    """A running actor's resident memory (VmRSS) and its proportional share (Pss: a page
    shared with N processes counts 1/N, so apps forked from one parent are not counted for
    what they share), in MiB; None where /proc does not tell us (not running, not ours)."""
    found: dict[str, float | None] = {"rss_mib": None, "pss_mib": None}
    for path, field, key in (
        (f"/proc/{pid}/status", "VmRSS:", "rss_mib"),
        (f"/proc/{pid}/smaps_rollup", "Pss:", "pss_mib"),
    ):
        if pid is None:
            break
        try:
            with open(path) as lines:
                value = next((line.split()[1] for line in lines if line.startswith(field)), None)
        except OSError:
            continue
        found[key] = round(int(value) / 1024, 1) if value is not None else None
    return found


def _attach_diagnostics(data_dir: Path, actors: list[dict[str, Any]]) -> None:
    """Each app's own report of itself (`diagnostics`), from `runtime.db`, running or not."""
    from actors.store import read_diagnostics

    reports = read_diagnostics(data_dir)
    for actor in actors:
        report = reports.get(str(actor["name"]).removeprefix("app."))
        if report is not None and str(actor["name"]).startswith("app."):
            actor["diagnostics"] = report


def _diagnostic_lines(actor: dict[str, Any]) -> list[str]:
    """What an app said of itself, as the app's words: its health, then its newest events."""
    report = actor.get("diagnostics")
    if not report:
        return []
    health = report["health"] or "not reported"
    detail = f" ({report['detail']})" if report.get("detail") else ""
    lines = [f"{actor['name']} says: health {health}{detail}, {report['events_total']} event(s)"]
    for event in report["recent"]:
        fields = json.dumps(event["fields"]) if event["fields"] else ""
        lines.append(f"  {event['level']} {event['name']} {fields}".rstrip())
    return lines


def _refused(actor: dict[str, Any]) -> str:
    """What the door refused of an actor's messages, by code (a running runtime's count)."""
    counts = actor.get("refused") or {}
    return ", ".join(f"{code} {n}" for code, n in sorted(counts.items()))


def _unknown_name(name: str, known: list[str]) -> str:
    choices = sorted(set(known))
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"no actor or mailbox named {name!r}{hint} (known: {', '.join(choices) or 'none'})"


def _messages(args: argparse.Namespace, name: str | None, *, dead: bool) -> int:
    data_dir = data_dir_of(args)
    if _live(data_dir):
        request = {
            "type": "mailbox",
            "name": name,
            "body": args.body,
            "limit": args.limit,
            "dead": dead,
        }
        messages = control_request(data_dir, request)["messages"]
    else:
        store = _offline_store(data_dir)
        known = mailbox_names(store)
        if name is not None and name not in known:
            store.close()
            raise ControlError(_unknown_name(name, known))
        messages = mailbox_listing(store, name, body=args.body, limit=args.limit, dead_only=dead)
        store.close()
    if args.json:
        print_json(messages)
        return 0
    columns = (["to"] if name is None else []) + MESSAGE_COLUMNS
    title = "dead letters" if dead else f"mailbox {name}"
    if not _live(data_dir):
        title += " (saved state: the runtime is stopped)"
    long_bodies: list[tuple[str, str]] = []
    rows = []
    for message in messages:
        row = [message.get(c) for c in columns]
        if args.body:
            body = json.dumps(message.get("body"), ensure_ascii=False)
            if len(body) > BODY_INLINE:
                long_bodies.append((str(message["id"]), body))
                body = "(below)"
            row.append(body)
        rows.append(row)
    shown = columns + (["body"] if args.body else [])
    _table(title, shown, rows, empty="no dead letters" if dead else "nothing waiting")
    console = _console()
    for message_id, body in long_bodies:
        console.print(f"{visible(message_id)}:", markup=False)
        console.print(f"  {visible(body)}", markup=False, soft_wrap=True)
    return 0


def _mailbox(args: argparse.Namespace) -> int:
    return _messages(args, args.name, dead=False)


def _dead(args: argparse.Namespace) -> int:
    return _messages(args, None, dead=True)


def _why(args: argparse.Namespace) -> int:
    from ._debug_why import as_json, follow, found_anything, render

    data_dir = data_dir_of(args)
    if not (data_dir / "mailbox.db").exists() and not (data_dir / "runtime.db").exists():
        raise ControlError(
            f"no runtime data in {data_dir}; point at the runtime's data dir with --data-dir DIR"
        )
    path = follow(data_dir, args.id)
    path["runtime"] = "running" if _live(data_dir) else "stopped"
    if args.json:
        print(as_json(path))
    else:

        def hop_duration(hop: dict[str, Any]) -> str:
            return duration((hop["done_ms"] - hop["created_ms"]) / 1000)

        console = _console()
        for line in render(path, lambda ms: local_time(ms / 1000), hop_duration):
            console.print(visible(line), markup=False, soft_wrap=True)
    return 0 if found_anything(path) else 1


def _require_live(data_dir: Path) -> None:
    if not _live(data_dir):
        raise ControlError(
            f"no runtime is running on {data_dir}; start it with `lineup run`, or point at"
            " another data dir with --data-dir DIR"
        )


def _command(
    args: argparse.Namespace, request: dict[str, Any], summary: Callable[[dict[str, Any]], str]
) -> int:
    """Sends `request` to the live runtime; prints the answer as JSON with --json, else the
    line `summary` makes of it."""
    data_dir = data_dir_of(args)
    _require_live(data_dir)
    result = control_request(data_dir, request)
    print_json(result) if args.json else print(summary(result))
    return 0


def _redrive(args: argparse.Namespace) -> int:
    return _command(
        args, {"type": "redrive", "id": args.id}, lambda result: f"redriven {result['redriven']}"
    )


def _kill(args: argparse.Namespace) -> int:
    return _command(
        args,
        {"type": "kill", "name": args.name},
        lambda result: f"killed {result['name']} (pid {result['pid']})",
    )


def _send(args: argparse.Namespace) -> int:
    data_dir = data_dir_of(args)
    _require_live(data_dir)
    try:
        body = json.loads(args.body)
    except json.JSONDecodeError as exc:
        return fail(f"--body is not JSON: {exc}")
    names = [a["name"] for a in control_request(data_dir, {"type": "actors"})["actors"]]
    if args.name not in names:
        # It would wait in a mailbox nobody reads: most likely a typo.
        raise ControlError(_unknown_name(args.name, names).replace("or mailbox ", ""))
    request = {
        "type": "send",
        "to": args.name,
        "message_type": args.type,
        "body": body,
        "wait": max(0.0, args.wait),
    }
    result = control_request(data_dir, request, timeout=max(10.0, args.wait + 5))
    if args.json:
        print_json(result)
    else:
        print(visible(_outcome_line(args.name, result)))
    return 1 if result.get("outcome") in ("refused", "dead") else 0


def _outcome_line(to: str, result: dict[str, Any]) -> str:
    message_id = result["id"]
    outcome = result.get("outcome")
    if outcome is None:
        return f"sent {message_id} to {to} (not waiting for its outcome)"
    if outcome == "handled":
        reply = json.dumps(result.get("reply"), ensure_ascii=False)
        return f"delivered {message_id}: {to} handled it and answered {reply}"
    if outcome == "refused":
        return f"refused {message_id}: {to} answered {result['code']}: {result.get('detail', '')}"
    if outcome == "dead":
        return f"dead {message_id}: {to} failed on it every attempt ({result.get('error')})"
    return f"sent {message_id}: {result.get('detail', outcome)}"


def _trace_line(record: dict[str, Any]) -> str:
    at = local_time(record.get("at"))
    if record.get("message_type") == "lifecycle" or "actor" in record:
        actor = record.get("actor") or record.get("to")
        return f"{at} {record['event']:12} {actor} {record.get('detail') or ''}".rstrip()
    return (
        f"{at} {record['event']:12} {record['sender']:>18} -> {record['to']:<18}"
        f" {record['message_type']} {record['id']}"
    )


def _trace(args: argparse.Namespace) -> int:
    data_dir = data_dir_of(args)
    _require_live(data_dir)
    # What already happened to the actors, from the supervisor's own record, then live.
    history = control_request(data_dir, {"type": "lifecycle", "actor": args.actor})["events"]
    request = {"type": "trace", "actor": args.actor, "type_prefix": args.type_prefix}
    try:
        for event in history:
            print(json.dumps(event) if args.json else visible(_trace_line(event)), flush=True)
        for record in control_stream(data_dir, request):
            record.pop("type", None)
            print(json.dumps(record) if args.json else visible(_trace_line(record)), flush=True)
    except KeyboardInterrupt:
        pass
    return 0
