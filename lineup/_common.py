"""What every `lineup` subcommand shares: the data dir option and output helpers."""

from __future__ import annotations

import argparse
import json
import os
import sys
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
