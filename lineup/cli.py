"""`lineup`: the LineUp Runtime's command line.

lineup run                 run the runtime in the foreground (Ctrl-C stops it)
lineup stop                stop the runtime on the data dir and wait until it has stopped
lineup chat ...            the chat app's timeline; type into it from the shell
lineup debug ...           inspect actors, mailboxes, dead letters; kill, redrive, trace
lineup protocol ...        validate messages against the contracts, export JSON Schemas
lineup app ...             make, sign and verify app bundles; install and manage apps
lineup appserver           run the reference AppServer (the embedded default's peer)
lineup agent ...           send agent messages, run the demo agent, see its tools, call one
lineup tools ...           agent tools as the runtime sees them: inventories, calls
lineup capabilities ...    what apps were allowed to do: list the grants, revoke one
lineup settings ...        grants, the tool policy, the default app, each app's data
lineup artifacts ...       the artifacts apps made: list them, show one, save one
lineup open                open the runtime's window in your browser
lineup web url             the address to open the runtime in a browser (one-time key)
lineup bench ...           measure the runtime and the command line beside bare baselines
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import (
    Parser,
    add_data_dir,
    conversation_id,
    data_dir_of,
    default_data_dir,
    fail,
    first_error,
    lock_holder,
    os_error,
)

if TYPE_CHECKING:
    import subprocess

# Each command's module and one-line help. Only the module of the command that runs is
# imported (`lineup --help` imports none), so every command starts as fast as Python does.
COMMANDS: dict[str, tuple[str, str]] = {
    "stop": ("lineup.stop_cmd", "stop the runtime on the data dir and wait until it has stopped"),
    "chat": ("lineup.chat_cmd", "the chat app: history, send, attach"),
    "debug": ("lineup.debug_cmd", "inspect actors, mailboxes, dead letters; kill, redrive, trace"),
    "protocol": ("lineup.protocol_cmd", "validate messages, export JSON Schemas"),
    "app": ("lineup.app_cmd", "make, sign, verify app bundles; manage the installed apps"),
    "appserver": ("lineup.appserver_cmd", "run the reference AppServer in the foreground"),
    "agent": ("lineup.agent_cmd", "act as the remote agent: send, demo, inventory, call"),
    "tools": ("lineup.tools_cmd", "agent tools as the runtime sees them: inventories, calls"),
    "capabilities": (
        "lineup.capabilities_cmd",
        "what apps were allowed to do: list the grants, revoke one",
    ),
    "settings": (
        "lineup.settings_cmd",
        "grants, the tool policy, the default app, each app's data",
    ),
    "artifacts": ("lineup.artifacts_cmd", "the artifacts apps made: list, show, save one"),
    "open": ("lineup.open_cmd", "open the runtime's window in your browser"),
    "web": ("lineup.web_cmd", "the web host: the address to open the runtime in a browser"),
    "bench": ("bench", "measure the runtime and the command line beside bare baselines"),
}


def _run(args: argparse.Namespace) -> int:
    from actors.kernel import DataDirUnusable, check_data_dir, supervisor_pid_alive

    data_dir = data_dir_of(args)
    if supervisor_pid_alive(data_dir):  # before anything starts, so nothing attaches to it
        return fail(_in_use(data_dir))
    try:  # the supervisor checks it again; here it is before the AppServer writes there
        check_data_dir(data_dir)
    except DataDirUnusable as exc:
        return fail(str(exc))
    if args.config:
        problem = _config_problem(args.config)
        if problem:
            return fail(f"--config: {problem}")
    if not args.headless and sys.stdin.isatty():
        return _run_with_terminal_chat(args)
    return _run_headless(args)


def _run_with_terminal_chat(args: argparse.Namespace) -> int:
    """The runtime headless in a child process (its log in the data dir), the terminal chat
    in this one; leaving the chat stops the runtime."""
    import signal
    import subprocess
    import time

    from .terminal_chat import attach

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
    forwarded += ["--no-web"] if args.no_web else ["--web-port", str(args.web_port)]
    started = time.time()
    with open(data_dir / "logs" / "runtime.log", "ab") as log:
        runtime = subprocess.Popen(
            [sys.executable, "-m", "lineup.cli", "run", "--headless", *forwarded],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        if not _comes_up(runtime, data_dir, timeout=30):
            log_file = data_dir / "logs" / "runtime.log"
            said = [line for line in _tail(log_file) if line.startswith("error:")]
            why = f": {said[-1].removeprefix('error:').strip()}" if said else ""
            return fail(f"the runtime did not start{why}; see {log_file}")
        if not args.no_web and not args.config:
            from .web_cmd import announce

            announce(data_dir, started)
        with _ends_with(runtime):
            return attach(data_dir, args.conversation, quit_stops=True)
    except RuntimeEnded:
        print(f"the runtime stopped (exit status {runtime.returncode})", file=sys.stderr)
        return 0 if runtime.returncode == 0 else 1
    finally:
        runtime.send_signal(signal.SIGTERM)
        runtime.wait()
        print("stopped", file=sys.stderr)


class RuntimeEnded(Exception):
    """The runtime the terminal chat was started with has ended (`lineup stop`, or it
    failed): the chat ends with it instead of waiting for a line nobody will take."""


@contextlib.contextmanager
def _ends_with(runtime: subprocess.Popen[bytes]) -> Iterator[None]:
    """Raise `RuntimeEnded` in this (main) thread as soon as `runtime` exits, even while it
    waits for the user's next line: SIGCHLD interrupts the read."""
    import signal

    def ended(_signum: int, _frame: object) -> None:
        if runtime.poll() is not None:
            raise RuntimeEnded

    previous = signal.signal(signal.SIGCHLD, ended)
    try:
        if runtime.poll() is not None:  # it ended before the handler was in place
            raise RuntimeEnded
        yield
    finally:
        signal.signal(signal.SIGCHLD, previous)


def _comes_up(runtime: subprocess.Popen[bytes], data_dir: Path, timeout: float) -> bool:
    """True once the runtime answers; False at the deadline, or as soon as its process has
    ended: a runtime that refused to start has said why in its log already."""
    import time

    from .terminal_chat import wait_for_runtime

    deadline = time.monotonic() + timeout
    while runtime.poll() is None and time.monotonic() < deadline:
        if wait_for_runtime(data_dir, timeout=0.2):
            return True
    return False


def _config_problem(path: Path) -> str | None:
    """What is wrong with a `--config` file, in a phrase; None when it loads."""
    from actors.kernel import RuntimeConfig

    try:
        RuntimeConfig.load(path)
    except OSError as exc:
        return os_error(exc)
    except ValueError as exc:  # not JSON, or not a RuntimeConfig
        errors = getattr(exc, "errors", None)
        if callable(errors):  # a validation error: its first problem, where it is
            first = errors()[0]
            reason = f"{'.'.join(map(str, first['loc'])) or 'the file'}: {first['msg']}"
        else:
            reason = str(exc)
        return f"{path} is not a runtime configuration: {reason}"
    return None


def _tail(path: Path, size: int = 8192) -> list[str]:
    """The last lines of a file ([] when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - size))
            return handle.read().decode(errors="replace").splitlines()
    except OSError:
        return []


def _run_headless(args: argparse.Namespace) -> int:
    import logging
    import time
    from functools import partial

    import trio

    from actors import runtime_children
    from actors.kernel import RuntimeConfig, Supervisor, prefork_zygote, settle_garbage_collector

    from ._embedded import embedded_appserver

    data_dir = data_dir_of(args)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )

    loaded = RuntimeConfig.load(args.config) if args.config else None  # checked in _run

    def configure(url: str | None) -> RuntimeConfig:
        if loaded is not None:
            config = loaded
        else:
            web_port = None if args.no_web else args.web_port
            config = runtime_children.default_config(
                data_dir, appserver_url=url, web_port=web_port, user_downloads=True
            )
        if args.synchronous:
            config.synchronous = args.synchronous
        return config

    async def supervise(config: RuntimeConfig) -> None:
        """The supervisor until it stops; meanwhile the web host's address, once it listens."""
        async with trio.open_nursery() as nursery:
            if not args.no_web and loaded is None:
                from .web_cmd import announce

                started = time.time()
                announcing = partial(announce, data_dir, started)
                nursery.start_soon(
                    partial(trio.to_thread.run_sync, announcing, abandon_on_cancel=True)
                )
            await Supervisor(config, data_dir, zygote=zygote).run()
            nursery.cancel_scope.cancel()

    async def main() -> None:
        if args.appserver:
            await supervise(configure(args.appserver))
            return
        # One command shows the whole system, on an AppServer of its own.
        async with embedded_appserver(data_dir, demo_agent=not args.no_demo_agent) as url:
            print(f"embedded AppServer on {url}", file=sys.stderr)
            await supervise(configure(url))

    print(f"LineUp Runtime on {data_dir} (Ctrl-C stops it)", file=sys.stderr)
    # The AppServer's URL changes no child's module: the zygote's imports are known now.
    with prefork_zygote(configure(None)) as zygote:
        settle_garbage_collector()  # what is imported lives as long as the process
        try:
            trio.run(main)
        except BaseException as exc:  # unwrap the nurseries' groups, then decide
            error = first_error(exc)
            if isinstance(error, KeyboardInterrupt):
                raise error from None
            if not isinstance(error, RuntimeError | OSError):
                raise
            return fail(_start_failure(error, data_dir))
    print("stopped", file=sys.stderr)
    return 0


def _start_failure(error: BaseException, data_dir: Path) -> str:
    """Why `lineup run` could not start, in one sentence: a data dir in use names the
    process that holds it."""
    message = str(error)
    if "another runtime" in message or "another AppServer" in message:
        return _in_use(data_dir)
    if isinstance(error, OSError):
        return f"the runtime on {data_dir} stopped: {os_error(error)}"
    return message


def _in_use(data_dir: Path) -> str:
    """A data dir another runtime holds, in one sentence naming that runtime's pid and the
    command that stops it."""
    from .stop_cmd import runtime_pid

    pid = runtime_pid(data_dir) or lock_holder(data_dir / "appserver" / "appserver.lock")
    holder = f" (pid {pid})" if pid else ""
    stop = "lineup stop" if data_dir == default_data_dir() else f"lineup stop --data-dir {data_dir}"
    return (
        f"another runtime{holder} is already using {data_dir}; stop it with `{stop}`, or pass "
        "--data-dir for another folder"
    )


def _port(text: str) -> int:
    """An argparse `type`: a TCP port, 0 for any free one."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535)")
    return int(text)


def _command_of(argv: Sequence[str]) -> str | None:
    """The command word of a `lineup` command line (its first argument not an option)."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `lineup` parser. With `argv`, only the command it names is built in full (the
    others are listed by name and help); without, every command is."""
    parser = Parser(
        prog="lineup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    every = argv is None
    wanted = None if argv is None else _command_of(argv)
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
        type=conversation_id,
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
    run.add_argument(
        "--web-port",
        type=_port,
        default=0,
        metavar="N",
        help="the web host's port on 127.0.0.1 (default: a free one, kept while it runs)",
    )
    run.add_argument(
        "--no-web",
        action="store_true",
        help="start no web host (no browser window; `lineup web url` then has none to show)",
    )
    run.add_argument("--config", type=Path, help="a RuntimeConfig JSON file replacing the defaults")
    run.add_argument(
        "--synchronous",
        choices=["OFF", "NORMAL", "FULL", "EXTRA"],
        help="SQLite durability of the mailbox. NORMAL (the default) syncs before anything"
        " leaves the device or tells the user it is done: a power cut takes nothing that"
        " was acknowledged, only work nobody was told of, which is done again. FULL syncs"
        " every commit besides (an fsync each). EXTRA is FULL and more; OFF never syncs,"
        " so a power cut may take what was acknowledged",
    )
    run.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="supervisor log level (default INFO)",
    )
    run.set_defaults(func=_run)
    for name, (module, help) in COMMANDS.items():
        if every or name == wanted:
            register: Any = importlib.import_module(module).register
            register(commands)
        else:  # listed for `lineup --help` and the "did you mean"; built when it runs
            commands.add_parser(name, help=help, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(words).parse_args(words)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as raised:
        exc = first_error(raised)  # a command run in trio raises from inside its nursery
        if isinstance(exc, BrokenPipeError):  # `lineup debug actors | head`: the reader left
            sys.stderr.close()
            return 0
        kernel = sys.modules.get("actors.kernel")
        if kernel is not None and isinstance(exc, kernel.ControlError):
            return fail(str(exc))
        sqlite = sys.modules.get("sqlite3")
        # A file of the data dir that cannot be read (damaged, locked, not a database); not
        # a misuse of SQLite by the command itself, which stays a bug to see.
        if sqlite is not None and (
            isinstance(exc, sqlite.OperationalError) or type(exc) is sqlite.DatabaseError
        ):
            return fail(
                f"the runtime's files could not be read ({exc}): check that the data dir is"
                " the runtime's, readable, and on a disk that works, then try again"
            )
        raise


if __name__ == "__main__":
    sys.exit(main())
