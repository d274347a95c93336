"""`lineup`: the LineUp Runtime's command line.

lineup run                 run the runtime in the foreground (Ctrl-C stops it)
lineup chat ...            the chat app's timeline; type into it from the shell
lineup debug ...           inspect actors, mailboxes, dead letters; kill, redrive, trace
lineup protocol ...        validate messages against the contracts, export JSON Schemas
lineup app ...             make, sign and verify app bundles
lineup appserver           run the reference AppServer (the embedded default's peer)
lineup agent ...           send agent messages, run the demo agent, see its tools, call one
lineup tools ...           agent tools as the runtime sees them: inventories, calls
lineup bench ...           measure the runtime beside a bare baseline
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from actors.kernel import ControlError, settle_garbage_collector

from . import agent_cmd, app_cmd, appserver_cmd, chat_cmd, debug_cmd, protocol_cmd, tools_cmd
from ._common import add_data_dir, data_dir_of, fail


def _run(args: argparse.Namespace) -> int:
    if not args.headless and sys.stdin.isatty():
        return _run_with_terminal_chat(args)
    return _run_headless(args)


def _run_with_terminal_chat(args: argparse.Namespace) -> int:
    """The runtime headless in a child process (its log in the data dir), the terminal chat
    in this one; leaving the chat stops the runtime."""
    import signal
    import subprocess

    from .terminal_chat import attach, wait_for_runtime

    data_dir = data_dir_of(args)
    (data_dir / "logs").mkdir(parents=True, exist_ok=True)
    forwarded = ["--data-dir", str(data_dir), "--log-level", args.log_level]
    for flag, value in (
        ("--appserver", args.appserver),
        ("--config", args.config),
        ("--synchronous", args.synchronous),
    ):
        if value:
            forwarded += [flag, str(value)]
    if args.no_demo_agent:
        forwarded.append("--no-demo-agent")
    with open(data_dir / "logs" / "runtime.log", "ab") as log:
        runtime = subprocess.Popen(
            [sys.executable, "-m", "lineup.cli", "run", "--headless", *forwarded],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        if not wait_for_runtime(data_dir, timeout=30):
            return fail(f"the runtime did not start; see {data_dir / 'logs' / 'runtime.log'}")
        return attach(data_dir, args.conversation)
    finally:
        runtime.send_signal(signal.SIGTERM)
        runtime.wait()
        print("stopped", file=sys.stderr)


def _run_headless(args: argparse.Namespace) -> int:
    import trio

    import supervisor
    from actors.kernel import RuntimeConfig, Supervisor

    from ._embedded import embedded_appserver

    data_dir = data_dir_of(args)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )

    def configure(url: str | None) -> RuntimeConfig:
        if args.config:
            config = RuntimeConfig.load(args.config)
        else:
            config = supervisor.default_config(data_dir, appserver_url=url)
        if args.synchronous:
            config.synchronous = args.synchronous
        return config

    async def main() -> None:
        if args.appserver:
            await Supervisor(configure(args.appserver), data_dir).run()
            return
        # One command shows the whole system, on an AppServer of its own.
        async with embedded_appserver(data_dir, demo_agent=not args.no_demo_agent) as url:
            print(f"embedded AppServer on {url}", file=sys.stderr)
            await Supervisor(configure(url), data_dir).run()

    print(f"LineUp Runtime on {data_dir} (Ctrl-C stops it)", file=sys.stderr)
    settle_garbage_collector()  # what is imported lives as long as the process
    try:
        trio.run(main)
    except RuntimeError as exc:
        return fail(str(exc))
    print("stopped", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lineup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="run the runtime in the foreground until Ctrl-C or SIGTERM",
        description="Run the supervisor and its actors in the foreground. Ctrl-C or SIGTERM "
        "stops the actors in reverse start order.",
    )
    add_data_dir(run)
    run.add_argument(
        "--headless",
        action="store_true",
        help="start no terminal chat (also the case when standard input is not a terminal)",
    )
    run.add_argument(
        "--conversation",
        default="main",
        metavar="ID",
        help="the conversation the terminal chat shows (default main)",
    )
    run.add_argument(
        "--appserver",
        metavar="URL",
        help="the AppServer to use (ws://...); without it, an embedded one on loopback",
    )
    run.add_argument(
        "--no-demo-agent",
        action="store_true",
        help="with the embedded AppServer, do not start the demo agent",
    )
    run.add_argument("--config", type=Path, help="a RuntimeConfig JSON file replacing the defaults")
    run.add_argument(
        "--synchronous",
        choices=["OFF", "NORMAL", "FULL", "EXTRA"],
        help="SQLite durability of the mailbox (default FULL: an ack means on disk)",
    )
    run.add_argument("--log-level", default="INFO", help="supervisor log level (default INFO)")
    run.set_defaults(func=_run)
    chat_cmd.register(commands)
    debug_cmd.register(commands)
    protocol_cmd.register(commands)
    app_cmd.register(commands)
    appserver_cmd.register(commands)
    agent_cmd.register(commands)
    tools_cmd.register(commands)
    # The bench is a package of its own; only its command line loads here, its
    # measurements when one runs.
    from bench import register as register_bench

    register_bench(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ControlError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `lineup debug actors | head`: the reader left, not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
