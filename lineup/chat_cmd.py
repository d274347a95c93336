"""`lineup chat ...`: the chat app from the shell.

`lineup chat history --conversation ID [--json]` prints the timeline as the chat app shows
it (read from the app's own log, so it works with the runtime up or stopped);
`lineup chat send --conversation ID --text TEXT` types a message into the chat of a running
runtime (a UI action through the host actor, over the runtime's UI socket, like the
terminal UI's); `lineup chat attach [--conversation ID]` is that terminal UI.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_data_dir, data_dir_of, print_json, print_table


def register(subparsers: Any) -> None:
    chat = subparsers.add_parser("chat", help="the chat app: history, send", description=__doc__)
    commands = chat.add_subparsers(dest="chat_command", required=True, metavar="COMMAND")
    history = commands.add_parser("history", help="the chat timeline of one conversation")
    add_data_dir(history)
    history.add_argument("--conversation", required=True, metavar="ID")
    history.add_argument("--json", action="store_true", help="print JSON, not a table")
    history.set_defaults(func=_history)
    send = commands.add_parser("send", help="type a message into the chat (runtime running)")
    add_data_dir(send)
    send.add_argument("--conversation", required=True, metavar="ID")
    send.add_argument("--text", required=True)
    send.set_defaults(func=_send)
    attach = commands.add_parser(
        "attach", help="an interactive terminal chat on a running runtime (/quit leaves)"
    )
    add_data_dir(attach)
    attach.add_argument(
        "--conversation",
        default=DEFAULT_CONVERSATION,
        metavar="ID",
        help=f"the conversation (default {DEFAULT_CONVERSATION})",
    )
    attach.set_defaults(func=_attach)


DEFAULT_CONVERSATION = "main"


def _attach(args: argparse.Namespace) -> int:
    from .terminal_chat import attach

    return attach(data_dir_of(args), args.conversation)


def _history(args: argparse.Namespace) -> int:
    from apps.chat import history

    view = history(data_dir_of(args), args.conversation)
    if args.json:
        print_json(view)
        return 0
    rows = [[item["id"], item["sender"], item["state"], item["shown"]] for item in view["timeline"]]
    print_table(f"chat {args.conversation}", ["id", "sender", "state", "text"], rows)
    for task_id, task in view["tasks"].items():
        print(f"task {task_id}: {task}")
    return 0


def _send(args: argparse.Namespace) -> int:
    from .ui_session import UiSession

    body = {"kind": "send", "conversation_id": args.conversation, "text": args.text}
    print(UiSession(data_dir_of(args), session_id="cli").act(body))
    return 0
