"""`lineup debug ...`: look inside a runtime, live through its control socket, or, when it is
stopped, through a read-only view of its mailbox file."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.kernel import (
    ControlError,
    MailboxStore,
    control_request,
    control_stream,
    mailbox_counts,
    mailbox_listing,
    supervisor_pid_alive,
)

from ._common import add_data_dir, data_dir_of, fail, print_json, print_table

ACTOR_COLUMNS = ["name", "pid", "state", "restarts", "uptime_s", "pending", "inflight", "dead"]
MESSAGE_COLUMNS = ["id", "from", "type", "attempts", "failures", "state", "age_s", "error"]


def register(subparsers: Any) -> None:
    debug = subparsers.add_parser(
        "debug",
        help="inspect a runtime: actors, mailboxes, dead letters, live trace",
        description=__doc__,
    )
    commands = debug.add_subparsers(dest="debug_command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = commands.add_parser(name, help=help, description=help)
        add_data_dir(parser)
        parser.add_argument("--json", action="store_true", help="print JSON, not a table")
        return parser

    command("status", "runtime state, uptime and degraded actors").set_defaults(func=_status)
    actors = command("actors", "every actor: pid, state, restarts, uptime, mailbox depth")
    actors.add_argument(
        "--stats", action="store_true", help="also ask each actor for its statistics"
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
    redrive = command("redrive", "move a dead letter back to its mailbox, failures cleared")
    redrive.add_argument("id", help="the dead message's id")
    redrive.set_defaults(func=_redrive)
    kill = command("kill", "SIGKILL an actor's process (it restarts by its policy)")
    kill.add_argument("name", help="the actor to kill")
    kill.set_defaults(func=_kill)
    send = command("send", "put a message into an actor's mailbox, as sender 'debug'")
    send.add_argument("name", help="the recipient actor")
    send.add_argument("type", help="the message type")
    send.add_argument("--body", default="null", help="the body as JSON (default null)")
    send.set_defaults(func=_send)
    trace = command("trace", "print frames live as the switchboard handles them (Ctrl-C ends)")
    trace.add_argument("--actor", help="only frames from or to this actor")
    trace.add_argument("--type", dest="type_prefix", help="only message types with this prefix")
    trace.set_defaults(func=_trace)


def _live(data_dir: Path) -> bool:
    return supervisor_pid_alive(data_dir)


def _offline_store(data_dir: Path) -> MailboxStore:
    path = data_dir / "mailbox.db"
    if not path.exists():
        raise ControlError(f"no runtime data in {data_dir} (no mailbox.db)")
    return MailboxStore(path, readonly=True)


def runtime_lifecycle(data_dir: Path, status: dict[str, Any]) -> str:
    """The runtime lifecycle: the supervisor's own states, else the connection
    state the transport last reported to the store."""
    from actors.store import read_lifecycle

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
    if status["lifecycle"] == "offline_degraded" and status["state"] == "running":
        # Up, but not reaching the AppServer: the user's messages wait in the outbox.
        from actors.store import read_lifecycle

        record = read_lifecycle(data_dir) or {}
        status["state"] = "degraded"
        status["reason"] = f"offline: {record.get('detail') or 'the AppServer cannot be reached'}"
    if args.json:
        print_json(status)
    else:
        print_table(
            f"runtime in {data_dir}",
            ["field", "value"],
            [
                [key, json.dumps(value) if isinstance(value, list) else value]
                for key, value in status.items()
            ],
        )
    return 0


def _actors(args: argparse.Namespace) -> int:
    data_dir = data_dir_of(args)
    if _live(data_dir):
        actors = control_request(data_dir, {"type": "actors", "stats": args.stats})["actors"]
    else:
        store = _offline_store(data_dir)
        actors = [
            {
                "name": name,
                "pid": None,
                "state": "stopped",
                "restarts": None,
                "uptime_s": None,
                **counts,
            }
            for name, counts in sorted(mailbox_counts(store).items())
        ]
        store.close()
    if args.json:
        print_json(actors)
    else:
        rows = [[a.get(c) for c in ACTOR_COLUMNS] + [_refused(a)] for a in actors]
        print_table("actors", [*ACTOR_COLUMNS, "refused"], rows)
        if args.stats:
            for actor in actors:
                if actor.get("statistics"):
                    print(f"{actor['name']}: {json.dumps(actor['statistics'])}")
    return 0


def _refused(actor: dict[str, Any]) -> str:
    """What the door refused of an actor's messages, by code (a running runtime's count)."""
    counts = actor.get("refused") or {}
    return ", ".join(f"{code} {n}" for code, n in sorted(counts.items()))


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
        messages = mailbox_listing(store, name, body=args.body, limit=args.limit, dead_only=dead)
        store.close()
    if args.json:
        print_json(messages)
    else:
        columns = (
            (["to"] if name is None else []) + MESSAGE_COLUMNS + (["body"] if args.body else [])
        )
        title = "dead letters" if dead else f"mailbox {name}"
        print_table(title, columns, [[_cell(m.get(c)) for c in columns] for m in messages])
    return 0


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict | list) else value


def _mailbox(args: argparse.Namespace) -> int:
    return _messages(args, args.name, dead=False)


def _dead(args: argparse.Namespace) -> int:
    return _messages(args, None, dead=True)


def _require_live(data_dir: Path) -> None:
    if not _live(data_dir):
        raise ControlError(f"no runtime is running on {data_dir}; start it with `lineup run`")


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
    result = control_request(
        data_dir, {"type": "send", "to": args.name, "message_type": args.type, "body": body}
    )
    print_json(result) if args.json else print(f"sent {result['id']}")
    return 0


def _trace(args: argparse.Namespace) -> int:
    data_dir = data_dir_of(args)
    _require_live(data_dir)
    request = {"type": "trace", "actor": args.actor, "type_prefix": args.type_prefix}
    try:
        for record in control_stream(data_dir, request):
            record.pop("type", None)
            if args.json:
                print(json.dumps(record), flush=True)
            else:
                at = time.strftime("%H:%M:%S", time.localtime(record["at"]))
                print(
                    f"{at} {record['event']:9} {record['sender']:>18} -> {record['to']:<18}"
                    f" {record['message_type']} {record['id']}",
                    flush=True,
                )
    except KeyboardInterrupt:
        pass
    return 0
