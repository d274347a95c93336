"""`lineup chat ...`: the chat app from the shell.

`lineup chat history [--conversation ID] [--json]` prints the conversation as the chat app
shows it (read from the app's own log, so it works with the runtime up or stopped; when
it is stopped, the output says it is the saved state): local times, the agent's Markdown
rendered safely, the tasks as lines; `lineup chat send [--conversation ID] --text TEXT`
types a message into the chat of a running runtime (a UI action through the host actor,
over the runtime's UI socket, like the terminal UI's); `lineup chat attach
[--conversation ID]` is that terminal UI.

What the agent or an app wrote is untrusted: it is printed as text, never as console
markup, with control and invisible formatting characters shown visibly.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import (
    ENDED_TASK,
    STATE_STYLES,
    STATE_WORDS,
    add_data_dir,
    conversation_id,
    data_dir_of,
    print_json,
)

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

DEFAULT_CONVERSATION = "main"
_DESCRIPTION = (
    "Your conversation with the agent. `history` prints a conversation (with the runtime"
    " stopped too: then it is the saved state); `send` types a message into the chat of a"
    " running runtime; `attach` opens the terminal chat (type /help there)."
)
_CONVERSATION_HELP = f"the conversation (default {DEFAULT_CONVERSATION})"


def register(subparsers: Any) -> None:
    chat = subparsers.add_parser(
        "chat", help="the chat app: history, send, attach", description=_DESCRIPTION
    )
    commands = chat.add_subparsers(dest="chat_command", required=True, metavar="COMMAND")
    history = commands.add_parser("history", help="the chat timeline of one conversation")
    add_data_dir(history)
    history.add_argument(
        "--conversation",
        type=conversation_id,
        default=DEFAULT_CONVERSATION,
        metavar="ID",
        help=_CONVERSATION_HELP,
    )
    history.add_argument("--json", action="store_true", help="print JSON, not a table")
    history.set_defaults(func=_history)
    send = commands.add_parser("send", help="type a message into the chat (runtime running)")
    add_data_dir(send)
    send.add_argument(
        "--conversation",
        type=conversation_id,
        default=DEFAULT_CONVERSATION,
        metavar="ID",
        help=_CONVERSATION_HELP,
    )
    send.add_argument("--text", required=True, help="the message")
    send.set_defaults(func=_send)
    attach = commands.add_parser(
        "attach", help="an interactive terminal chat on a running runtime (/help, /quit)"
    )
    add_data_dir(attach)
    attach.add_argument(
        "--conversation",
        type=conversation_id,
        default=DEFAULT_CONVERSATION,
        metavar="ID",
        help=_CONVERSATION_HELP,
    )
    attach.set_defaults(func=_attach)


def _console(*, stderr: bool = False) -> Console:
    """A console for this command: colours only on a terminal and without NO_COLOR (rich
    reads it), no emoji codes or highlighting applied to what it prints."""
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False, emoji=False)
    if not console.is_terminal:  # piped: no colours, and room for long lines
        console = Console(stderr=stderr, highlight=False, emoji=False, width=160)
    return console


def _error(message: str) -> int:
    """One sentence on stderr, taken as text (no markup); exit status 1."""
    from rich.text import Text

    _console(stderr=True).print(Text.assemble(("error: ", "red"), message), soft_wrap=True)
    return 1


def _not_running(data_dir: Path) -> str:
    return (
        f"No runtime is answering in {data_dir}: start it with `lineup run`, or point"
        " --data-dir (or LINEUP_DATA_DIR) at the data dir of a running one."
    )


def _running(data_dir: Path) -> bool:
    from actors.kernel import ControlError, ui_request

    if not (data_dir / "ui.sock").exists():
        return False
    try:
        ui_request(data_dir, {"type": "status"}, timeout=2)
    except ControlError:
        return False
    return True


def _attach(args: argparse.Namespace) -> int:
    from .terminal_chat import attach

    data_dir = data_dir_of(args)
    if not _running(data_dir):
        return _error(_not_running(data_dir))
    return attach(data_dir, args.conversation)


def _history(args: argparse.Namespace) -> int:
    from apps.chat import conversations, has_log, history

    data_dir = data_dir_of(args)
    if args.json:  # for scripts: the view as it is, empty for an unknown conversation
        print_json(history(data_dir, args.conversation))
        return 0
    if not has_log(data_dir) and not data_dir.exists():
        return _error(
            f"There is no data dir {data_dir}: point --data-dir (or LINEUP_DATA_DIR) at"
            " the folder `lineup run` was given."
        )
    known = conversations(data_dir)
    if known and args.conversation not in known:
        close = difflib.get_close_matches(args.conversation, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        listed = ", ".join(repr(name) for name in known[:10])
        return _error(
            f"No conversation {args.conversation!r} in {data_dir}: {hint}pass"
            f" --conversation with one of {listed}."
        )
    view = history(data_dir, args.conversation)
    for line in history_lines(view, args.conversation, running=_running(data_dir)):
        _console().print(line)
    return 0


def history_lines(view: dict[str, Any], conversation: str, *, running: bool) -> list[Any]:
    """What `lineup chat history` prints for `view`: a note when it is saved state, the
    timeline as a table (local times, safe Markdown, everything else as plain text), then
    the tasks as lines; "nothing yet" when the conversation is empty."""
    from rich.table import Table
    from rich.text import Text

    from apps.chat import visible

    lines: list[Any] = []
    name = visible(conversation, newlines=False)
    if not running:
        lines.append(Text("saved state: the runtime is not running", style="dim"))
    if not view["timeline"] and not view["tasks"]:
        lines.append(Text(f"chat {name}: nothing yet"))
        return lines
    zone = datetime.now().astimezone().tzname() or "local"
    table = Table(title=Text(f"chat {name}"), title_justify="left")
    table.add_column(f"time ({zone})", no_wrap=True)
    table.add_column("from", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("text", overflow="fold")
    questions = _question_ids(view)
    for item in view["timeline"]:
        raw = str(item.get("state", ""))
        state = visible(STATE_WORDS.get(raw, raw), newlines=False)
        if item.get("code"):
            state += f" ({visible(item['code'], newlines=False)})"
        sender = "you" if item["sender"] == "user" else visible(item["sender"], newlines=False)
        table.add_row(
            Text(_local_time(item)),
            Text(sender, style="cyan" if item["sender"] == "user" else "magenta"),
            Text(state, style=STATE_STYLES.get(item.get("state", ""), "")),
            _item_text(item, questions),
        )
    lines.append(table)
    for task_id, task in view["tasks"].items():
        lines.append(_task_text(task_id, task))
    return lines


def _question_ids(view: dict[str, Any]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for item in view["timeline"]:
        if item.get("kind") == "interaction":
            interaction_id = str((item.get("interaction") or {}).get("interaction_id"))
            ids.setdefault(interaction_id, f"q{len(ids) + 1}")
    return ids


def _item_text(item: dict[str, Any], questions: dict[str, str]) -> RenderableType:
    from rich.text import Text

    from apps.chat import artifact_label, deadline_words, local_times, render, visible

    kind = item.get("kind")
    if kind == "tool":
        text = Text(f"tool call {visible(item.get('text', ''), newlines=False)}")
        timer = deadline_words(item.get("deadline"))
        if timer:
            text.append(f"\n{timer}")
        if item.get("artifact"):
            text.append(f"\n→ {artifact_label(item['artifact'])}")
        return text
    if kind == "interaction":
        interaction = item.get("interaction") or {}
        short = questions.get(str(interaction.get("interaction_id")), "q?")
        text = Text(f"asks {short}: {visible(item.get('text', ''))}")
        options = [
            visible(option.get("label", option.get("id")), newlines=False)
            for option in interaction.get("options", [])
        ]
        if options:
            text.append("\n" + ", ".join(f"{n}. {o}" for n, o in enumerate(options, start=1)))
        return text
    if item.get("format") == "markdown":
        return render(local_times(item.get("text", "")), "markdown")
    return Text(visible(item.get("text", "")))


def _task_text(task_id: str, task: dict[str, Any]) -> Text:
    from rich.text import Text

    from apps.chat import visible

    title = visible(task.get("title") or task.get("label") or task_id, newlines=False)
    line = Text.assemble("task ", (title, "bold"))
    label = visible(task.get("label", ""), newlines=False)
    if label and label != title:
        line.append(f" — {label}")
    status = str(task.get("status", "?"))
    if task.get("percent") is not None and status not in ENDED_TASK:
        line.append(f": {task['percent']} %")
    line.append(" (")
    words = visible(STATE_WORDS.get(status, status), newlines=False)
    line.append(words, style=STATE_STYLES.get(status, ""))
    line.append(")")
    return line


def _local_time(item: dict[str, Any]) -> str:
    """When the item was sent, in local time: the envelope's timestamp for the agent's, the
    time in the id for the user's; "" when neither tells."""
    moment: datetime | None = None
    stamp = item.get("time")
    if isinstance(stamp, str):
        try:
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            moment = None
    if moment is None and item.get("sender") == "user":
        from actors.kernel import id_timestamp, is_valid_id

        if is_valid_id(item["id"]):
            moment = datetime.fromtimestamp(id_timestamp(item["id"])).astimezone()
    if moment is None:
        return ""
    local = moment.astimezone()
    if local.date() == datetime.now().astimezone().date():
        return local.strftime("%H:%M:%S")
    return local.strftime("%Y-%m-%d %H:%M:%S")


def _send(args: argparse.Namespace) -> int:
    from actors.kernel import ControlError

    from .ui_session import UiSession

    data_dir = data_dir_of(args)
    if not args.text.strip():
        return _error("Nothing to send: give the message after --text.")
    if not _running(data_dir):
        return _error(_not_running(data_dir))
    body = {"kind": "send", "conversation_id": args.conversation, "text": args.text}
    try:
        message_id = UiSession(data_dir, session_id="cli").act(body)
    except ControlError as exc:
        return _error(f"The runtime did not take the message ({exc}); check `lineup debug status`.")
    sys.stdout.write(f"{message_id}\n")
    return 0
