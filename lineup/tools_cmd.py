"""`lineup tools inventory|calls`: what the tool router published and decided, for the
operator.

Both read the tool router's `tool_router.db` read-only, so they work whether the runtime is
running or not:
`inventory` shows, per conversation, the last inventory revision the agent was given and
every installed tool with whether it is visible and why (or why not); `calls` shows the
agent's tool calls with their state, error code, age and deadline operation (when it ends,
or what it waits for; with `--json`, whole rows including each call's history and
`deadline`).

Also `python -m lineup.tools_cmd inventory|calls [options]`. The tool router's readers are
imported when a command runs, so `lineup --help` does not load them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Final

from ._common import (
    DATA_DIR_ENV,
    add_data_dir,
    conversation_id,
    data_dir_of,
    fail,
    positive_int,
    print_json,
    print_table,
    run_subcommand,
)

CALL_STATES: Final = (
    "accepted",
    "starting",
    "waiting",
    "running",
    "deadline",
    "succeeded",
    "failed",
)
DEFAULT_LIMIT: Final = 50


def register(subparsers: Any) -> None:
    tools = subparsers.add_parser(
        "tools",
        help="agent tools as the runtime sees them: published inventories, calls",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = tools.add_subparsers(dest="tools_command", required=True, metavar="COMMAND")
    inventory = commands.add_parser(
        "inventory",
        help="per conversation: the inventory revision published and every tool's visibility",
        description="Per conversation: the inventory revision last published to the agent, "
        "when, and every installed tool with whether it is visible and the reason.",
    )
    add_data_dir(inventory)
    inventory.add_argument(
        "--conversation",
        type=conversation_id,
        metavar="ID",
        help="only this conversation (default: every one)",
    )
    inventory.add_argument(
        "--json", action="store_true", help="print the stored rows as JSON, not tables"
    )
    inventory.set_defaults(func=_inventory)
    calls = commands.add_parser(
        "calls",
        help="the agent's tool calls, newest first: state, error code, age, deadline",
        description="The agent's tool calls, newest first: call id, app and method, state, "
        "error code, age and, for a call the runtime holds until a deadline, when it ends; "
        "with --json the whole stored row of each, history and deadline included.",
    )
    add_data_dir(calls)
    calls.add_argument(
        "--state",
        choices=CALL_STATES,
        help="only calls in this state (succeeded and failed are final)",
    )
    calls.add_argument(
        "--conversation", type=conversation_id, metavar="ID", help="only calls of this conversation"
    )
    calls.add_argument(
        "--limit",
        type=positive_int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most the N newest calls (default {DEFAULT_LIMIT})",
    )
    calls.add_argument(
        "--json", action="store_true", help="print the whole rows as JSON, not a table"
    )
    calls.set_defaults(func=_calls)


def _runtime_db(args: argparse.Namespace) -> Path | None:
    """The data dir, if it holds the tool router's database."""
    from actors.tool_router import DB_FILE

    data_dir = data_dir_of(args)
    return data_dir if (data_dir / DB_FILE).is_file() else None


def _no_data(args: argparse.Namespace) -> int:
    from actors.tool_router import DB_FILE

    return fail(
        f"no runtime data in {data_dir_of(args)} (no {DB_FILE}); pass --data-dir with the "
        f"runtime's data dir (or set ${DATA_DIR_ENV}), or start the runtime there once with "
        "`lineup run`"
    )


def _note_saved_state(data_dir: Path) -> None:
    """With no runtime running on `data_dir`, say (on stderr) that what follows is the state
    it saved, not a live view."""
    from actors.kernel import supervisor_pid_alive

    if not supervisor_pid_alive(data_dir):
        print(f"saved state: no runtime is running on {data_dir}", file=sys.stderr)


def _age(at_ms: Any, now_ms: int) -> str:
    if not isinstance(at_ms, int):
        return ""
    seconds = max(0, (now_ms - at_ms) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _timestamp(at_ms: Any) -> str:
    if not isinstance(at_ms, int):
        return "an unknown time"
    seconds, millis = divmod(at_ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _inventory(args: argparse.Namespace) -> int:
    from actors.tool_router import read_inventories

    data_dir = _runtime_db(args)
    if data_dir is None:
        return _no_data(args)
    rows = [
        row
        for row in read_inventories(data_dir)
        if args.conversation is None or row["conversation_id"] == args.conversation
    ]
    if args.json:
        print_json([{**row, "published": _timestamp(row["published_ms"])} for row in rows])
        return 0
    _note_saved_state(data_dir)
    if not rows:
        where = f"for {args.conversation!r}" if args.conversation else f"in {data_dir}"
        print(f"no inventory has been published {where}")
        return 0
    now_ms = int(time.time() * 1000)
    for row in rows:
        visibility = row.get("visibility") or []
        shown = sum(1 for entry in visibility if entry.get("visible"))
        to = f"agent {row['agent_id']}" if row["agent_id"] else "every agent, for new conversations"
        print(
            f"{row['conversation_id']}: revision {row['revision']}, published "
            f"{_timestamp(row['published_ms'])} ({_age(row['published_ms'], now_ms)} ago) to "
            f"{to}; {shown} of {len(visibility)} installed tools visible"
        )
        if not visibility:
            continue
        print_table(
            "",
            ["app", "method", "version", "visible", "reason"],
            [
                [
                    entry.get("app_scope"),
                    entry.get("method"),
                    entry.get("contract_version"),
                    "yes" if entry.get("visible") else "no",
                    entry.get("reason"),
                ]
                for entry in visibility
            ],
        )
    return 0


def _deadline(operation: dict[str, Any] | None, now_ms: int) -> str:
    """A call's deadline operation in a cell: when it ends (or ended), or what it waits for."""
    if operation is None:
        return ""
    state, ends = operation["state"], operation.get("ends_ms")
    if state == "waiting_foreground":
        return "waiting for its app in front"
    if state == "paused" and isinstance(operation.get("remaining_ms"), int):
        return f"paused, {operation['remaining_ms'] // 1000} s left"
    if state == "running" and isinstance(ends, int):
        left = "due" if ends <= now_ms else "in " + _age(now_ms, ends)
        return f"ends {_timestamp(ends)} ({left})"
    return f"{state} {_timestamp(operation.get('ended_ms'))}"


def _calls(args: argparse.Namespace) -> int:
    from actors.tool_router import read_tool_calls, read_tool_deadlines

    data_dir = _runtime_db(args)
    if data_dir is None:
        return _no_data(args)
    rows = read_tool_calls(data_dir, state=args.state, conversation_id=args.conversation)
    rows = rows[::-1][: args.limit]  # newest first
    deadlines = read_tool_deadlines(data_dir)
    for row in rows:
        row["deadline"] = deadlines.get(row["call_id"])
    if args.json:
        print_json(rows)
        return 0
    _note_saved_state(data_dir)
    now_ms = int(time.time() * 1000)
    filters = [
        f"{name} {value}"
        for name, value in (("state", args.state), ("conversation", args.conversation))
        if value is not None
    ]
    which = f" ({', '.join(filters)})" if filters else ""
    if not rows:
        print(f"no tool calls{which}")
        return 0
    print_table(
        f"tool calls{which}, newest first",
        ["call id", "conversation", "app/method", "state", "code", "age", "deadline"],
        [
            [
                row["call_id"],
                row["conversation_id"],
                f"{row['app_scope']}/{row['method']}",
                row["state"],
                row.get("code"),
                _age(row.get("created_ms"), now_ms),
                _deadline(row["deadline"], now_ms),
            ]
            for row in rows
        ],
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_subcommand(register, "tools", argv)


if __name__ == "__main__":
    sys.exit(main())
