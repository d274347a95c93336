"""`lineup agent send|demo|inventory|call|history|mcp`: talk to an AppServer as an agent
(`peers.agent`), from the command line: send messages, run the demo agent, show the tool
inventory the agent holds, call a tool; show what the AppServer holds that the runtime
sent into a conversation (read from its file, `_agent_history`); and be the agent of a
conversation as an MCP server (`agent_mcp_cmd`).

Also `python -m lineup.agent_cmd COMMAND [options]`. The peers are imported when a
command runs, so `lineup --help` loads none of them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ._agent_target import Target, resolve_target
from ._common import (
    conversation_id,
    data_dir_of,
    fail,
    first_error,
    positive_int,
    print_json,
    print_table,
    run_subcommand,
)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def _add_connection(parser: argparse.ArgumentParser) -> None:
    from .appserver_cmd import DEFAULT_PORT, add_appserver_dir

    parser.add_argument(
        "--appserver",
        metavar="URL",
        help="the AppServer's WebSocket URL (default: the one recorded in the data dir by "
        f"a running `lineup appserver`, else ws://127.0.0.1:{DEFAULT_PORT}/v1/ws)",
    )
    add_appserver_dir(parser, "the AppServer's data dir, where the agent token is read")
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="read the token from FILE instead: an AppServer credentials.json, or a file "
        "holding the bare token",
    )
    parser.add_argument(
        "--agent",
        metavar="ID",
        help="the agent id to speak as (default: the AppServer's default agent: `demo` while"
        " the demo agent runs, else `agent`)",
    )


def register(subparsers: Any) -> None:
    agent = subparsers.add_parser(
        "agent",
        help="act as a remote agent against an AppServer (send messages, run the demo agent)",
        description="Speak to an AppServer as a remote agent: by default the AppServer "
        "embedded in the runtime of the data dir (DATA_DIR/appserver).",
    )
    commands = agent.add_subparsers(dest="agent_command", required=True, metavar="COMMAND")
    send = commands.add_parser(
        "send",
        help="send N agent messages into a conversation",
        description="Send agent messages (lineup.message) into a conversation and wait until "
        "the AppServer has accepted each, exactly once, in order. With --count N > 1 the "
        "messages read 'TEXT #1' … 'TEXT #N'.",
    )
    _add_connection(send)
    send.add_argument(
        "--conversation",
        type=conversation_id,
        required=True,
        metavar="ID",
        help="the conversation id",
    )
    send.add_argument("--text", required=True, help="the message text")
    send.add_argument(
        "--count", type=positive_int, default=1, metavar="N", help="how many (default 1)"
    )
    send.add_argument(
        "--format",
        choices=["plain", "markdown"],
        default="plain",
        help="how the chat renders the text (default plain)",
    )
    send.add_argument(
        "--timeout",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="give up when the AppServer has not answered for S seconds (default 30)",
    )
    send.add_argument("--json", action="store_true", help="print each message's id and seq")
    send.set_defaults(func=_send)
    demo = commands.add_parser(
        "demo",
        help="run the deterministic demo agent in the foreground",
        description="Run the demo agent until Ctrl-C: it answers every user message in "
        "Markdown, shows a task with progress, asks a choice, a confirm and an input, and "
        'reacts to the answers. With the sample apps installed it also answers "draw a house", '
        '"what\'s on the board", "export the board", "let\'s play", "let\'s draw" and '
        '"focus 25" by calling their tools.',
    )
    _add_connection(demo)
    demo.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="where the agent keeps its cursor and latest inventories "
        "(default: APPSERVER_DIR/agents/ID)",
    )
    demo.set_defaults(func=_demo)
    inventory = commands.add_parser(
        "inventory",
        help="show the tool inventory the agent holds for a conversation",
        description="Connect as the agent, read its backlog to the end and show the latest "
        "inventory (lineup.inventory) the runtime published for the conversation (or for "
        "all conversations): its revision and every tool with its app, method, contract "
        "version and schemas.",
    )
    _add_connection(inventory)
    inventory.add_argument(
        "--conversation",
        type=conversation_id,
        required=True,
        metavar="ID",
        help="the conversation id",
    )
    inventory.add_argument(
        "--timeout",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="give up when the backlog has not been read within S seconds (default 30)",
    )
    inventory.add_argument(
        "--json",
        action="store_true",
        help='print {"conversation_id", "revision", "tools": [...]} (the revision as the '
        "protocol writes it, a decimal string)",
    )
    inventory.set_defaults(func=_inventory)
    call = commands.add_parser(
        "call",
        help="call a tool of the agent's inventory and follow the call to its end",
        description="Connect as the agent, read its backlog to the end, call one tool "
        "(lineup.tool.invoke) from the latest inventory of the conversation, and print each "
        "receipt and progress the runtime sends back, then the final result or error. Exit "
        "status 0 on a result, 1 on an error (its code is in the output), 2 on bad input.",
    )
    _add_connection(call)
    call.add_argument(
        "--conversation",
        type=conversation_id,
        required=True,
        metavar="ID",
        help="the conversation id",
    )
    call.add_argument(
        "--tool", required=True, metavar="METHOD", help="the tool's method, e.g. pomodoro.start"
    )
    call.add_argument(
        "--args",
        default="{}",
        metavar="JSON",
        help="the arguments, a JSON object (default {})",
    )
    call.add_argument(
        "--app",
        metavar="SCOPE",
        help="the app that owns the tool (default: the one the inventory lists it under); "
        "with --app a tool the inventory does not list is called anyway, for the runtime "
        "to refuse",
    )
    call.add_argument(
        "--revision",
        type=positive_int,
        metavar="N",
        help="the inventory revision to call against (default: the latest the agent holds)",
    )
    call.add_argument(
        "--timeout",
        type=_positive_float,
        default=60.0,
        metavar="S",
        help="give up after S seconds without a word about the call (default 60)",
    )
    call.add_argument(
        "--until-deadline",
        action="store_true",
        help="for a call the runtime holds until a deadline (its progress says when it ends), "
        "wait for its result; without it the command stops once the call has started",
    )
    call.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object at the end: the call, its events and its outcome",
    )
    call.set_defaults(func=_call)
    _register_history(commands)
    from .agent_mcp_cmd import register as register_mcp

    register_mcp(commands, _add_connection)


def _register_history(commands: Any) -> None:
    from .appserver_cmd import add_appserver_dir

    history = commands.add_parser(
        "history",
        help="show what the AppServer holds that the runtime sent into a conversation",
        description="Read the AppServer's record (read-only, with the runtime running or "
        "stopped) and print, in stream order, every message the runtime sent into the "
        "conversation: what the agent has received, or will: its seq, message id, type, "
        "sender, call id (for a tool call's receipts and outcome) and timestamp.",
    )
    add_appserver_dir(history, "the AppServer's data dir, whose record is read")
    history.add_argument(
        "--conversation",
        type=conversation_id,
        required=True,
        metavar="ID",
        help="the conversation id",
    )
    history.add_argument(
        "--json",
        action="store_true",
        help='print {"conversation_id", "messages": [...]}, each message with seq, message_id, '
        "type, sender {kind, id}, timestamp, accepted_at and, when it has them, call_id, "
        "reply_to and text",
    )
    history.set_defaults(func=_history)


class _GaveUp(Exception):
    pass


def _run_agent(target: Target, body: Callable[..., Awaitable[int]], **options: Any) -> int:
    """Runs `body(client)` beside a running `AgentClient`; turns failures into messages."""
    import trio

    from contracts import ContractError
    from link import LinkFailed
    from peers.agent import AgentClient, AgentError

    try:
        client = AgentClient(target.url, agent_id=target.agent_id, token=target.token, **options)
    except (ValueError, AgentError) as exc:
        return fail(str(exc))

    async def main() -> int:
        async with trio.open_nursery() as nursery:
            await nursery.start(client.run)
            result = await body(client)
            nursery.cancel_scope.cancel()
        return result

    try:
        return trio.run(main)
    except BaseException as exc:  # unwrap the nursery's group, then decide
        error = first_error(exc)
        if isinstance(error, LinkFailed):
            return fail(f"the AppServer refused agent {target.agent_id!r}: {error}", 1)
        if isinstance(error, ContractError):
            return fail(f"invalid message: {error}")
        if isinstance(error, AgentError | _GaveUp):
            return fail(str(error), 1)
        if isinstance(error, KeyboardInterrupt):
            return 130
        raise


def _send(args: argparse.Namespace) -> int:
    import trio

    from contracts import ContractError, SubmitResult

    try:
        target = resolve_target(args)
    except ValueError as exc:
        return fail(str(exc))

    async def body(client: Any) -> int:
        texts = (
            [args.text]
            if args.count == 1
            else [f"{args.text} #{index}" for index in range(1, args.count + 1)]
        )
        try:
            envelopes = [
                client.envelope(
                    "lineup.message", args.conversation, {"text": text, "format": args.format}
                )
                for text in texts
            ]
        except ContractError as exc:
            return fail(f"invalid message: {exc}")
        submissions = [client.enqueue(envelope) for envelope in envelopes]
        verdicts: list[SubmitResult] = []
        for submission in submissions:
            # --timeout bounds the silence between two verdicts, not the whole run.
            with trio.move_on_after(args.timeout):
                verdicts.append(await submission.verdict())
                continue
            error = re.sub(
                r"^[A-Za-z]+(Error|Exception): ", "", str(client.statistics().last_error or "")
            )
            raise _GaveUp(
                f"gave up: no answer from the AppServer at {target.url} for {args.timeout:g} s"
                f" ({len(verdicts)} of {len(submissions)} accepted"
                + (f"; last error: {error})" if error else ")")
            )
        return _report(args, envelopes, verdicts)

    return _run_agent(target, body, receive=False)


def _report(args: argparse.Namespace, envelopes: list[dict[str, Any]], verdicts: list[Any]) -> int:
    pairs = list(zip(envelopes, verdicts, strict=True))
    rejected = [(env, verdict) for env, verdict in pairs if verdict.status != "accepted"]
    if args.json:
        rows = [
            {
                "id": env["id"],
                "text": env["payload"]["text"],
                **verdict.model_dump(
                    mode="json", exclude_none=True, exclude={"frame", "idempotency_key"}
                ),
            }
            for env, verdict in pairs
        ]
        json.dump({"conversation": args.conversation, "messages": rows}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    for env, verdict in rejected:
        print(f"rejected {env['id']}: {verdict.code}: {verdict.detail}", file=sys.stderr)
    if rejected:
        return 1
    if not args.json:
        seqs = [verdict.seq for verdict in verdicts]
        span = f"seq {seqs[0]}" if len(seqs) == 1 else f"seq {seqs[0]}…{seqs[-1]}"
        print(f"sent {len(seqs)} message(s) to {args.conversation} ({span})")
    return 0


def _demo(args: argparse.Namespace) -> int:
    try:
        target = resolve_target(args)
    except ValueError as exc:
        return fail(str(exc))
    state_dir = (
        Path(args.state_dir) if args.state_dir else (target.data_dir / "agents" / target.agent_id)
    )

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    async def body(client: Any) -> int:
        from peers.agent import DemoAgent

        log(f"demo agent {target.agent_id!r} on {target.url} (Ctrl-C stops it)")
        await DemoAgent(client, log=log).run()
        return 0

    return _run_agent(target, body, state_dir=state_dir)


async def _caught_up(client: Any, target: Target, timeout: float) -> None:
    """Until the agent has read its backlog (so it holds the latest inventory)."""
    import trio

    with trio.move_on_after(timeout):
        await client.wait_caught_up()
        return
    raise _GaveUp(
        f"gave up: the AppServer at {target.url} did not deliver the agent's backlog within "
        f"{timeout:g} s; check that it is running (`lineup run` or `lineup appserver`) and "
        "try again"
    )


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _tool_row(tool: Any) -> dict[str, Any]:
    row: dict[str, Any] = tool.model_dump(mode="json", exclude_none=True)
    return {"app_scope": row.pop("app_scope"), **row}


def _inventory(args: argparse.Namespace) -> int:
    try:
        target = resolve_target(args)
    except ValueError as exc:
        return fail(str(exc))

    async def body(client: Any) -> int:
        await _caught_up(client, target, args.timeout)
        inventory = client.inventory(args.conversation)
        if inventory is None:
            return fail(
                f"agent {target.agent_id!r} holds no inventory for {args.conversation!r} yet; "
                "start the runtime (`lineup run`) and write in that conversation, then try again",
                1,
            )
        tools = [_tool_row(tool) for tool in inventory.tools]
        if args.json:
            print_json(
                {
                    "conversation_id": args.conversation,
                    "revision": inventory.revision,
                    "tools": tools,
                }
            )
            return 0
        print_table(
            f"inventory of {args.conversation}, revision {inventory.revision} "
            f"({len(tools)} tool{'' if len(tools) == 1 else 's'})",
            ["app", "method", "version", "call model", "title"],
            [
                [
                    tool["app_scope"],
                    tool["method"],
                    tool["contract_version"],
                    tool.get("call_model", ""),
                    tool.get("title", ""),
                ]
                for tool in tools
            ],
        )
        for tool in tools:  # the schemas, too wide for the table
            print(f"{tool['app_scope']} {tool['method']} v{tool['contract_version']}")
            print(f"  input  {_compact(tool['input_schema'])}")
            print(f"  output {_compact(tool['output_schema'])}")
        return 0

    return _run_agent(target, body, inbox=False)


def _event_row(event: Any) -> dict[str, Any]:
    envelope = event.envelope
    row: dict[str, Any] = {
        "seq": event.seq,
        "event": event.type.removeprefix("lineup.tool."),
        "type": event.type,
        "id": envelope.id,
        "sender": {"kind": envelope.sender.kind, "id": envelope.sender.id},
        "payload": envelope.payload,
    }
    for key in ("instance_id", "operation_id"):
        value = getattr(envelope.scope, key)
        if value is not None:
            row[key] = value
    return row


def _event_line(row: dict[str, Any]) -> str:
    payload = row["payload"]
    if row["event"] == "result":
        detail = _compact(payload.get("output"))
    elif "code" in payload:
        detail = payload["code"] + (f": {payload['message']}" if payload.get("message") else "")
        detail += f": {payload['detail']}" if payload.get("detail") else ""
    elif row["event"] == "progress":
        parts = [
            payload.get("stage"),
            None if payload.get("percent") is None else f"{payload['percent']}%",
            payload.get("message"),
            f"until {payload['ends_at']}" if payload.get("ends_at") else None,
        ]
        detail = " ".join(str(part) for part in parts if part is not None)
    else:
        detail = row.get("instance_id", "")
    return f"{row['event']:<22} {detail}".rstrip()


def _shown(row: dict[str, Any], args: argparse.Namespace, summary: dict[str, Any]) -> None:
    summary["events"].append(row)
    if not args.json:
        print(_event_line(row), flush=True)


async def _started(
    call: Any, row: dict[str, Any], args: argparse.Namespace, summary: dict[str, Any]
) -> bool:
    """Whether the call has started a deadline the runtime keeps and the command stops
    following it here (said, as the outcome `started`), as it does unless
    --until-deadline."""
    ends_at = row["payload"].get("ends_at") if row["event"] == "progress" else None
    if not ends_at or args.until_deadline:
        return False
    await call.aclose()
    summary.update(outcome="started", ends_at=ends_at)
    if args.json:
        print_json(summary)
    else:
        print(f"started; the runtime ends it at {ends_at}", flush=True)
    return True


def _not_callable(inventory: Any, args: argparse.Namespace) -> str | None:
    """Why the tool cannot be called as the options say, in the options' terms, or None."""
    see = f"see `lineup agent inventory --conversation {args.conversation}`"
    offering = sorted(
        tool.app_scope
        for tool in (inventory.tools if inventory is not None else [])
        if tool.method == args.tool
    )
    if args.app is None and len(offering) > 1:
        return f"{args.tool!r} is offered by several apps ({', '.join(offering)}); pass --app"
    if args.app is None and not offering:
        hidden = _why_hidden(args)
        if hidden is not None:
            return f"cannot call {args.tool!r} in {args.conversation!r}: {hidden}"
        where = (
            "the agent holds no inventory for it"
            if inventory is None
            else f"it is not in the inventory (revision {inventory.revision})"
        )
        return (
            f"cannot call {args.tool!r} in {args.conversation!r}: {where}; {see}, or pass "
            "--app to call it anyway"
        )
    if inventory is None and args.revision is None:
        return (
            f"cannot call {args.tool!r} in {args.conversation!r}: the agent holds no inventory "
            "for it, so pass --revision as well"
        )
    return None


def _why_hidden(args: argparse.Namespace) -> str | None:
    """Why the runtime on this machine keeps the tool out of the conversation's inventory,
    with what to do, from the reasons it records beside each revision; None when it has no
    record of the tool (another machine's runtime, or no app ever offered it)."""
    import sqlite3

    from actors.tool_router import read_inventories

    try:
        rows = read_inventories(data_dir_of(args))
    except (OSError, sqlite3.Error):  # no runtime data here, or not readable: nothing to add
        return None
    by_conversation = {row["conversation_id"]: row for row in rows}
    row = by_conversation.get(args.conversation) or by_conversation.get("runtime:global")
    entries = [
        entry
        for entry in (row or {}).get("visibility") or []
        if entry.get("method") == args.tool and not entry.get("visible")
    ]
    if not entries:
        return None
    scope, reason = str(entries[0].get("app_scope")), str(entries[0].get("reason"))
    if reason == "the app is disabled":
        return f"the app {scope} is disabled; enable it with `lineup app enable {scope}`"
    if reason == "the app is not installed":
        return f"the app {scope} is not installed; install it with `lineup app install BUNDLE`"
    return f"{scope} keeps it hidden ({reason}); see `lineup tools inventory`"


def _call(args: argparse.Namespace) -> int:
    from contracts import is_app_scope

    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError:
        return fail(
            "--args is not valid JSON: write the arguments as a JSON object, e.g. "
            "'{\"minutes\": 25}'"
        )
    if not isinstance(arguments, dict):
        return fail("--args must be a JSON object, e.g. '{\"minutes\": 25}'")
    if args.app is not None and not is_app_scope(args.app):
        return fail(f"--app: {args.app!r} is not an app scope (lower case, e.g. pomodoro)")
    try:
        target = resolve_target(args)
    except ValueError as exc:
        return fail(str(exc))

    async def body(client: Any) -> int:
        import trio

        from peers.agent import AgentError, SubmitRejected

        await _caught_up(client, target, args.timeout)
        problem = _not_callable(client.inventory(args.conversation), args)
        if problem is not None:
            return fail(problem)
        try:
            call = client.call(
                args.conversation,
                args.tool,
                arguments,
                app_scope=args.app,
                revision=args.revision,
            )
        except AgentError as exc:
            return fail(str(exc))
        summary: dict[str, Any] = {
            "call_id": call.call_id,
            "conversation_id": call.conversation_id,
            "app_scope": call.app_scope,
            "method": call.method,
            "contract_version": call.contract_version,
            "revision": call.revision,
            "arguments": arguments,
            "events": [],
        }
        if not args.json:
            print(
                f"call {call.call_id}: {call.app_scope} {call.method} v{call.contract_version}"
                f" (inventory revision {call.revision}) in {call.conversation_id}",
                flush=True,
            )
        events = call.__aiter__()
        while True:
            with trio.move_on_after(args.timeout):
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    break
                except SubmitRejected as rejected:
                    summary.update(outcome="rejected", code=rejected.code, detail=rejected.detail)
                    if args.json:
                        print_json(summary)
                    return fail(
                        f"the AppServer refused the call: {rejected.code}: {rejected.detail}", 1
                    )
                row = _event_row(event)
                _shown(row, args, summary)
                if await _started(call, row, args, summary):
                    return 0
                continue
            await call.aclose()
            raise _GaveUp(
                f"gave up: no word about call {call.call_id} for {args.timeout:g} s; it may still "
                f"finish, so look at `lineup tools calls --conversation {call.conversation_id}`"
            )
        final = call.final.envelope.payload
        if call.ok:
            summary.update(outcome="result", output=final["output"])
        else:
            summary.update(outcome="error", code=final["code"])
            if final.get("message"):
                summary["message"] = final["message"]
        if args.json:
            print_json(summary)
        return 0 if call.ok else 1

    return _run_agent(target, body, inbox=False)


def _history(args: argparse.Namespace) -> int:
    from ._agent_history import read_agent_history
    from .appserver_cmd import appserver_dir_of

    try:
        messages = read_agent_history(appserver_dir_of(args), args.conversation)
    except ValueError as exc:
        return fail(str(exc), 1)
    if args.json:
        print_json({"conversation_id": args.conversation, "messages": messages})
        return 0
    print_table(
        f"{args.conversation}: {len(messages)} message{'' if len(messages) == 1 else 's'} "
        "from the runtime",
        ["seq", "type", "sender", "message id", "call id", "timestamp"],
        [
            [
                str(row["seq"]),
                row["type"],
                f"{row['sender']['kind']}:{row['sender']['id']}",
                row["message_id"],
                row.get("call_id", ""),
                row["timestamp"] or "",
            ]
            for row in messages
        ],
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_subcommand(register, "agent", argv)


if __name__ == "__main__":
    sys.exit(main())
