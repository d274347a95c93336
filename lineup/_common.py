"""What every `lineup` subcommand shares: the data dir option, option types, output helpers,
and the plumbing of a subcommand package (lazy exports, `python -m` entry point)."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final, NoReturn

DATA_DIR_ENV = "LINEUP_DATA_DIR"


# How a timeline item's or a call's state is coloured, in `lineup chat` and the terminal chat.
STATE_STYLES: Final = {
    "accepted": "green",
    "answered": "green",
    "succeeded": "green",
    "pending": "yellow",
    "waiting": "yellow",
    "running": "yellow",
    "rejected": "red",
    "refused": "red",
    "failed": "red",
}
# A state in a person's word where the protocol's is not one (as the web page says it);
# every other state is shown as it is.
STATE_WORDS: Final = {"succeeded": "done"}
# A task that has ended: no progress is shown for it any more.
ENDED_TASK: Final = frozenset({"succeeded", "failed", "cancelled"})


def default_data_dir() -> Path:
    """The data dir of a command given no `--data-dir`: `$LINEUP_DATA_DIR`, else the
    platform's user data folder (`$XDG_DATA_HOME/lineup`, `~/.local/share/lineup`)."""
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lineup"


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"the runtime's data dir (default: ${DATA_DIR_ENV}, else ~/.local/share/lineup)",
    )


def no_runtime(data_dir: Path) -> str:
    """What to say when no runtime answers on `data_dir`: where we looked, how to look
    elsewhere."""
    return (
        f"no runtime is running on {data_dir}; start one with `lineup run`, or point at "
        f"another data dir with --data-dir DIR or ${DATA_DIR_ENV}"
    )


class Unreached(Exception):
    """No runtime took the request: the sentence to say, and the exit status (2 when none
    runs there, 1 when the one there did not take it)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def ask_actor(
    data_dir: Path, to: str, message_type: str, body: dict[str, Any], wait_s: float
) -> dict[str, Any]:
    """Send `message_type` to actor `to` as the operator and wait up to `wait_s` for its
    handler: the control socket's answer (`outcome` handled / refused / ..., `reply`, `code`,
    `detail`). `Unreached` when no runtime runs there or it did not take the request."""
    from actors.kernel import ControlError, control_request, supervisor_pid_alive

    request = {
        "type": "send",
        "to": to,
        "message_type": message_type,
        "body": body,
        "wait": wait_s,
    }
    try:
        return dict(control_request(data_dir, request, timeout=wait_s + 10))
    except ControlError as exc:
        if not supervisor_pid_alive(data_dir):
            raise Unreached(no_runtime(data_dir)) from None
        raise Unreached(f"the runtime on {data_dir} did not take the request: {exc}", 1) from None


def local_time(at_ms: Any) -> str:
    """A time in ms since the epoch as the local date and time, "" when there is none."""
    if not isinstance(at_ms, int) or isinstance(at_ms, bool):
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at_ms / 1000))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the closest of `choices`, or the valid ones when none is
    close ("" when there are none)."""
    options = sorted({str(choice) for choice in choices})
    if not options:
        return ""
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.5)
    if close:
        return f"; did you mean {close[0]!r}?"
    return "; choose from " + ", ".join(options)


_INVALID_CHOICE = re.compile(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)$")


class Parser(argparse.ArgumentParser):
    """An argparse parser whose "invalid choice" errors suggest the closest valid one (its
    subcommands' parsers are of this class too)."""

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.match(message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(3))
            word = found.group(2)
            message = f"unknown {_noun(found.group(1))} {word!r}" + did_you_mean(word, choices)
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _noun(argument: str) -> str:
    argument = argument.strip("-").lower()
    if argument in ("command", "bench") or argument.endswith("_command"):
        return "command"
    return argument.split("/")[0].replace("_", " ")


def os_error(exc: OSError) -> str:
    """An OSError for the user: the file and the reason, no errno."""
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename else reason


def first_error(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups that is not a cancellation, as
    nurseries raise them; `exc` itself when it is not a group. An interrupt anywhere in
    the group wins: what the other tasks raised as they stopped followed from it."""
    if isinstance(exc, BaseExceptionGroup):
        interrupts, _ = exc.split(KeyboardInterrupt)
        if interrupts is not None:
            return KeyboardInterrupt()
        for inner in exc.exceptions:
            found = first_error(inner)
            if not isinstance(found, BaseExceptionGroup) and type(found).__name__ != "Cancelled":
                return found
    return exc


def lock_holder(path: Path) -> int | None:
    """The pid holding an flock on `path`, from /proc/locks (None when unknown)."""
    try:
        inode = path.stat().st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].endswith(f":{inode}"):
            with_pid = fields[4]
            if with_pid.isdigit():
                return int(with_pid)
    return None


def conversation_id(text: str) -> str:
    """An argparse `type`: a conversation id as the contracts define it (`main`, `demo-2`);
    a blank or malformed one is refused before anything runs."""
    from contracts import is_conversation_id

    if not is_conversation_id(text):
        shown = repr(text) if text.strip() else "a blank id"
        raise argparse.ArgumentTypeError(
            f"{shown} is not a conversation id: use letters, digits, '.', '_' or '-' (at most"
            " 128, starting with a letter or digit), e.g. main"
        )
    return text


def positive_int(text: str) -> int:
    """An argparse `type`: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def data_dir_of(args: argparse.Namespace) -> Path:
    return Path(args.data_dir) if args.data_dir else default_data_dir()


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def print_table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Cells hold what apps and agents named (titles, codes, details): shown as text, never
    # read as console markup, with control characters written out.
    table = Table(title=Text(visible(title)), title_justify="left")
    for column in columns:
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(*(Text("" if cell is None else visible(str(cell))) for cell in row))
    console = Console()
    if not console.is_terminal:  # piped: do not squeeze tables into 80 columns
        console = Console(width=240)
    console.print(table)


# Control characters (C0 but tab, DEL, C1) and the bidirectional overrides and isolates:
# text from actors, apps and agents is shown with these made visible, never obeyed.
_HIDDEN = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with every control or bidi character written as its escape (`\\x1b`)."""
    return _HIDDEN.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


def fail(message: str, code: int = 2) -> int:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, soft_wrap=True).print(
        f"[red]error:[/red] {escape(message)}", highlight=False
    )
    return code


def run_subcommand(register: Callable[[Any], None], command: str, argv: list[str] | None) -> int:
    """`python -m lineup.COMMAND ARGS`: the same as `lineup COMMAND ARGS` (argv defaults to
    the process's arguments)."""
    parser = Parser(prog="lineup")
    commands = parser.add_subparsers(dest="command", required=True)
    register(commands)
    args = parser.parse_args([command, *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
