"""What every `lineup` subcommand shares: the data dir option, option types, output helpers,
and the plumbing of a subcommand package (lazy exports, `python -m` entry point)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

DATA_DIR_ENV = "LINEUP_DATA_DIR"


def default_data_dir() -> Path:
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lineup"


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"the runtime's data dir (default: ${DATA_DIR_ENV} or ~/.local/share/lineup)",
    )


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
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    console = Console()
    if not console.is_terminal:  # piped: do not squeeze tables into 80 columns
        console = Console(width=240)
    console.print(table)


def fail(message: str, code: int = 2) -> int:
    Console(stderr=True).print(f"[red]error:[/red] {message}", highlight=False)
    return code


def lazy_exports(
    package: str, namespace: MutableMapping[str, Any], exports: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: a name in `exports` (name -> relative module) is
    imported on first use and then kept in `namespace`, the package's `globals()`; any other
    name is an `AttributeError`. So `lineup --help` loads only what `register` needs."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__


def run_subcommand(register: Callable[[Any], None], command: str, argv: list[str] | None) -> int:
    """`python -m lineup.COMMAND ARGS`: the same as `lineup COMMAND ARGS` (argv defaults to
    the process's arguments)."""
    parser = argparse.ArgumentParser(prog="lineup")
    commands = parser.add_subparsers(dest="command", required=True)
    register(commands)
    args = parser.parse_args([command, *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
