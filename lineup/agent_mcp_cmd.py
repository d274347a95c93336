"""`lineup agent mcp`: the agent of one conversation as an MCP server (`peers.agent.mcp`),
over stdio for an MCP host that starts it, or Streamable HTTP on 127.0.0.1 with `--http`.

`--print-config` prints the `mcpServers` entry a host takes to start it (this machine's
absolute paths), and needs neither the MCP SDK nor a running runtime.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ._common import conversation_id, data_dir_of, fail, first_error, print_json

DEFAULT_CONVERSATION = "main"
MISSING_SDK = (
    "`lineup agent mcp` needs the MCP SDK, an optional part: install it with "
    "`pip install 'lineup-runtime[mcp]'` (in a checkout: `.venv/bin/pip install -e '.[mcp]'`)"
)


def register(commands: Any, add_connection: Any) -> None:
    from .appserver_cmd import port_number

    mcp = commands.add_parser(
        "mcp",
        help="be the agent of a conversation as an MCP server (stdio, or --http PORT)",
        description="Serve MCP as the agent of one conversation: tools/list is the "
        "conversation's tool inventory (each app's tool named APP_METHOD, '.' written '-'), "
        "tools/call calls one through the runtime (progress, cancel, one final), and two "
        "tools of its own send the user a message and read what the user wrote. Over stdio "
        "for a host that starts it (`--print-config` prints the entry), or Streamable HTTP "
        "on 127.0.0.1 with --http PORT, behind a key kept in STATE_DIR/http.key (0600).",
    )
    add_connection(mcp)
    mcp.add_argument(
        "--conversation",
        type=conversation_id,
        default=DEFAULT_CONVERSATION,
        metavar="ID",
        help=f"the conversation whose agent it is (default {DEFAULT_CONVERSATION})",
    )
    mcp.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="where it keeps its cursor, inventory and record of calls and the user's "
        "messages (default: APPSERVER_DIR/agents/AGENT/mcp/CONVERSATION)",
    )
    mcp.add_argument(
        "--http",
        type=port_number,
        metavar="PORT",
        help="serve Streamable HTTP at http://127.0.0.1:PORT/mcp (0: a free port) instead "
        "of stdio; a request must send the key of STATE_DIR/http.key as a bearer token",
    )
    mcp.add_argument(
        "--print-config",
        action="store_true",
        help="print the mcpServers entry (command, args, env) an MCP host takes to start "
        "this bridge with the options given, and exit",
    )
    mcp.set_defaults(func=_mcp)


def _lineup_command() -> str:
    """The absolute path of this installation's `lineup` (beside its Python), which a host
    starts whatever its working directory and PATH."""
    beside = Path(os.path.abspath(sys.executable)).parent / "lineup"
    return str(beside) if beside.exists() else str(Path(sys.argv[0]).resolve())


def _config(args: argparse.Namespace) -> dict[str, Any]:
    """The `mcpServers` entry: the options given, every path made absolute."""
    argv = ["agent", "mcp", "--conversation", args.conversation]
    for option, value in (
        ("--appserver", args.appserver),
        ("--appserver-dir", args.appserver_dir),
        ("--token-file", args.token_file),
        ("--agent", args.agent),
        ("--state-dir", args.state_dir),
    ):
        if value is not None:
            argv += [option, os.path.abspath(value) if isinstance(value, Path) else str(value)]
    env = {"LINEUP_DATA_DIR": os.path.abspath(data_dir_of(args))}
    return {"mcpServers": {"lineup": {"command": _lineup_command(), "args": argv, "env": env}}}


def _mcp(args: argparse.Namespace) -> int:
    if args.print_config:
        if args.http is not None:
            return fail(
                "--print-config prints the entry of a bridge a host starts over stdio; for "
                "--http, start it yourself and give the host its URL and the key of its "
                "http.key file"
            )
        print_json(_config(args))
        return 0
    try:
        import mcp  # noqa: F401  (the optional SDK, checked before anything starts)
    except ImportError:
        return fail(MISSING_SDK)
    from importlib.metadata import PackageNotFoundError, version

    import trio

    from link import LinkFailed
    from peers.agent.mcp import BridgeBusy, BridgeSettings, serve_http, serve_stdio

    from ._agent_target import resolve_target

    try:
        target = resolve_target(args)
    except ValueError as exc:
        return fail(str(exc))
    try:
        own_version = version("lineup-runtime")
    except PackageNotFoundError:
        own_version = "0"
    settings = BridgeSettings(
        url=target.url,
        agent_id=target.agent_id,
        token=target.token,
        conversation_id=args.conversation,
        state_dir=Path(args.state_dir)
        if args.state_dir
        else target.data_dir / "agents" / target.agent_id / "mcp" / args.conversation,
        version=own_version,
    )

    async def main() -> None:
        if args.http is None:
            await serve_stdio(settings)
            return
        async with trio.open_nursery() as nursery:
            port = await nursery.start(serve_http, settings, args.http)
            print(
                f"MCP (Streamable HTTP) for conversation {args.conversation} at "
                f"http://127.0.0.1:{port}/mcp; its key is in {settings.state_dir / 'http.key'}"
                " (send it as Authorization: Bearer KEY); Ctrl-C stops it",
                file=sys.stderr,
                flush=True,
            )

    try:
        trio.run(main)
    except BaseException as exc:
        error = first_error(exc)
        if isinstance(error, KeyboardInterrupt):
            return 130
        if isinstance(error, LinkFailed):
            return fail(f"the AppServer refused agent {target.agent_id!r}: {error}", 1)
        if isinstance(error, BridgeBusy):
            return fail(str(error), 1)
        if isinstance(error, OSError) and args.http is not None:
            return fail(f"cannot listen on 127.0.0.1:{args.http}: {error.strerror or error}", 1)
        raise
    return 0
