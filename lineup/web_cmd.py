"""`lineup web url [--json]`: the address of the web host of a running runtime.

Each call mints a new one-time key: the address opens one browser session, once (the
key becomes an HttpOnly session cookie and leaves the address bar). `lineup run` prints
one such address when its web host listens (`announce`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ._common import add_data_dir, data_dir_of, fail, no_runtime, print_json

WAIT_S = 60.0


def register(subparsers: Any) -> None:
    web = subparsers.add_parser(
        "web",
        help="the web host: the address to open the runtime in a browser",
        description="The web host serves the chat, the app registry and the app switcher"
        " in a browser, on 127.0.0.1 only. `url` prints an address with a fresh one-time key.",
    )
    commands = web.add_subparsers(dest="web_command", required=True, metavar="COMMAND")
    url = commands.add_parser(
        "url", help="print a one-time address of the running runtime's web host"
    )
    add_data_dir(url)
    url.add_argument("--json", action="store_true", help='print {"url": ...} as JSON')
    url.set_defaults(func=_url)


def current_url(data_dir: Path) -> str | None:
    """A fresh one-time address of the web host listening for the runtime on `data_dir`,
    or None when none listens."""
    from actors.web_host import endpoint_listening, mint_key, read_endpoint, web_url

    endpoint = read_endpoint(data_dir)
    if endpoint is None or not endpoint_listening(endpoint):
        return None
    return web_url(endpoint, mint_key(data_dir))


class NoAddress(Exception):
    """The runtime's window has no address to give: the sentence says why and what to do."""


def page_address(data_dir: Path, conversation: str | None = None) -> str:
    """A fresh one-time address of the window of the runtime on `data_dir` (showing
    `conversation`, when one is named); NoAddress with the reason."""
    from urllib.parse import urlencode

    from actors.kernel import supervisor_pid_alive
    from actors.web_host import read_endpoint

    if not supervisor_pid_alive(data_dir):
        raise NoAddress(no_runtime(data_dir))
    url = current_url(data_dir)
    endpoint = read_endpoint(data_dir) or {}
    if url is None and endpoint.get("error"):
        raise NoAddress(
            f"the web host of the runtime on {data_dir} cannot listen on 127.0.0.1:"
            f"{endpoint.get('port')} ({endpoint['error']}); restart the runtime with another"
            " --web-port"
        )
    if url is None:
        raise NoAddress(
            f"the runtime on {data_dir} has no web host listening (it may have been started"
            " with --no-web, or it is restarting): try again in a moment, or restart it"
            " with `lineup run`"
        )
    return f"{url}&{urlencode({'conversation': conversation})}" if conversation else url


def _url(args: argparse.Namespace) -> int:
    try:
        url = page_address(data_dir_of(args))
    except NoAddress as exc:
        return fail(str(exc))
    if args.json:
        print_json({"url": url})
    else:
        print(url)
    return 0


def announce(data_dir: Path, started: float, timeout: float = WAIT_S) -> str | None:
    """Wait until the web host of the runtime started at `started` (wall clock) listens,
    then print `Web: URL` on stderr; the URL, or None if it did not come up in time."""
    from actors.web_host import read_endpoint

    deadline = time.monotonic() + timeout
    endpoint_file = data_dir / "web" / "endpoint.json"
    while time.monotonic() < deadline:
        endpoint = read_endpoint(data_dir)
        try:
            fresh = endpoint_file.stat().st_mtime >= started - 1
        except FileNotFoundError:  # none yet, or the new run's web host removed the last
            fresh = False
        if endpoint is not None and fresh and endpoint.get("error"):
            print(
                f"Web: the web host cannot listen on 127.0.0.1:{endpoint.get('port')}"
                f" ({endpoint['error']}); start the runtime again with another --web-port",
                file=sys.stderr,
                flush=True,
            )
            return None
        url = current_url(data_dir) if endpoint is not None and fresh else None
        if url is not None:
            print(f"Web: {url}", file=sys.stderr, flush=True)
            return url
        time.sleep(0.05)
    print(
        f"the web host did not start within {timeout:.0f} s; see {data_dir}/logs/",
        file=sys.stderr,
    )
    return None
