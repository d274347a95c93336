"""`lineup open`: the runtime's window, in the user's browser.

The address carries a one-time key (`lineup web url`), so it is opened once, by the browser
the desktop names; where none can be started (a remote shell, no desktop) it is printed
instead, with a sentence saying to open it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import add_data_dir, conversation_id, data_dir_of, fail, print_json
from .web_cmd import NoAddress, page_address


def register(subparsers: Any) -> None:
    opener = subparsers.add_parser(
        "open",
        help="open the runtime's window in your browser",
        description="Open the running runtime's window (its web host, on 127.0.0.1) in the"
        " desktop's browser, with a fresh one-time key. Where no browser can be started, the"
        " address is printed to open by hand.",
    )
    add_data_dir(opener)
    opener.add_argument(
        "--conversation",
        type=conversation_id,
        metavar="ID",
        help="the conversation the window shows (default: main)",
    )
    opener.add_argument(
        "--print",
        dest="print_only",
        action="store_true",
        help="only print the one-time address; open nothing",
    )
    opener.add_argument("--json", action="store_true", help='print {"url", "opened"} as JSON')
    opener.set_defaults(func=_open)


def _open(args: argparse.Namespace) -> int:
    try:
        url = page_address(data_dir_of(args), args.conversation)
    except NoAddress as exc:
        return fail(str(exc))
    opened = False
    if not args.print_only:
        import webbrowser

        try:
            opened = webbrowser.open(url, new=2)
        except webbrowser.Error:
            opened = False
    if args.json:
        print_json({"url": url, "opened": opened})
    elif opened:
        print("opened the runtime's window in your browser", file=sys.stderr)
    else:
        if not args.print_only:
            print(
                "no browser could be started here: open this address in one (it opens once)",
                file=sys.stderr,
            )
        print(url)
    return 0
