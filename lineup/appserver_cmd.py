"""`lineup appserver`: the reference AppServer (`peers.appserver`) in the foreground.

Also `python -m lineup.appserver_cmd [options]`. The peer is imported when the command
runs, so `lineup --help` loads none of it.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

from ._common import (
    DATA_DIR_ENV,
    data_dir_of,
    fail,
    first_error,
    lock_holder,
    positive_int,
    run_subcommand,
)

DEFAULT_PORT = 8765


APPSERVER_SUBDIR = "appserver"


def appserver_dir_of(args: argparse.Namespace) -> Path:
    """The AppServer's folder: `--appserver-dir`, else the one the runtime's embedded
    AppServer keeps in its data dir (`DATA_DIR/appserver`, the data dir found as every
    command finds it)."""
    if getattr(args, "appserver_dir", None):
        return Path(args.appserver_dir)
    return data_dir_of(args) / APPSERVER_SUBDIR


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not within 0 … 65535")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative number")
    return value


def add_appserver_dir(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"the runtime's data dir, whose embedded AppServer keeps its files in DIR/appserver"
        f" (default: ${DATA_DIR_ENV}, else ~/.local/share/lineup)",
    )
    parser.add_argument(
        "--appserver-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"{what}, for an AppServer of its own (default: DATA_DIR/appserver)",
    )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "appserver",
        help="run the reference AppServer in the foreground",
        description="Run the reference AppServer in the foreground until Ctrl-C or SIGTERM. "
        "It keeps conversations and the numbered message stream in DIR/appserver.db "
        "(DIR: --appserver-dir, else DATA_DIR/appserver) and creates DIR/credentials.json "
        "(mode 0600: one runtime token, one token per agent) on first start. Prints its "
        "WebSocket URL on stdout. The fault options are for tests.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port",
        type=port_number,
        metavar="N",
        default=DEFAULT_PORT,
        help=f"TCP port; 0 picks a free one (default {DEFAULT_PORT})",
    )
    add_appserver_dir(parser, "the AppServer's data dir")
    parser.add_argument(
        "--agent",
        action="append",
        dest="agents",
        metavar="ID",
        help="an agent id that gets a token; repeatable, the first is the default agent "
        "(default: demo)",
    )
    parser.add_argument(
        "--heartbeat-ms",
        type=positive_int,
        metavar="MS",
        default=15_000,
        help="heartbeat interval announced in welcome, 1000 … 300000 (default 15000)",
    )
    parser.add_argument(
        "--max-unacked",
        type=positive_int,
        metavar="N",
        default=1024,
        help="live deliveries in flight per session before acks are awaited (default 1024)",
    )
    parser.add_argument(
        "--drop-every",
        type=positive_int,
        metavar="N",
        help="fault: cut each connection after its N-th frame",
    )
    parser.add_argument(
        "--duplicate-every",
        type=positive_int,
        metavar="N",
        help="fault: send every N-th frame twice",
    )
    parser.add_argument(
        "--delay-ms",
        type=non_negative_float,
        default=0.0,
        metavar="D",
        help="fault: hold every frame D milliseconds before sending it",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import trio

    from peers.appserver import AppServer, CredentialsError, DataDirInUse, write_endpoint

    data_dir = appserver_dir_of(args)
    try:
        server = AppServer(
            data_dir,
            host=args.host,
            port=args.port,
            agents=args.agents or ("demo",),
            heartbeat_interval_ms=args.heartbeat_ms,
            max_unacked=args.max_unacked,
            drop_every=args.drop_every,
            duplicate_every=args.duplicate_every,
            delay_ms=args.delay_ms,
        )
    except ValueError as exc:
        return fail(str(exc))

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            endpoint = write_endpoint(data_dir, server.url)
            try:
                print(server.url, flush=True)
                print(
                    f"AppServer on {server.url}, data in {data_dir} (Ctrl-C stops it)",
                    file=sys.stderr,
                    flush=True,
                )
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        break
            finally:
                with contextlib.suppress(OSError):
                    endpoint.unlink()
            nursery.cancel_scope.cancel()

    try:
        trio.run(main)
    except BaseException as exc:  # unwrap the nursery's group, then decide
        error = first_error(exc)
        if isinstance(error, DataDirInUse):
            pid = lock_holder(data_dir / "appserver.lock")
            holder = f" (pid {pid})" if pid else ""
            return fail(
                f"another AppServer{holder} is already using {data_dir}; stop it, or pass "
                "--appserver-dir for another folder"
            )
        if isinstance(error, CredentialsError):
            return fail(str(error))
        if isinstance(error, KeyboardInterrupt):
            return 130
        if isinstance(error, OSError):
            return fail(f"cannot serve on {args.host}:{args.port}: {error.strerror or error}")
        raise
    print("stopped", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_subcommand(register, "appserver", argv)


if __name__ == "__main__":
    sys.exit(main())
