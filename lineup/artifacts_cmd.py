"""`lineup artifacts list|show`: the artifacts apps made, as the runtime's store keeps them.

Both read `runtime.db` read-only, so they work whether the runtime is running or not:
`list` shows every artifact (or a conversation's) with its app, title, media type and size;
`show` one artifact's whole record, its SHA-256 included. The content stays in the store;
an app's artifacts go when the app is removed.

Also `python -m lineup.artifacts_cmd list|show [options]`. The store is imported when a
command runs, so `lineup --help` does not load it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ._common import (
    DATA_DIR_ENV,
    add_data_dir,
    data_dir_of,
    fail,
    print_json,
    print_table,
    run_subcommand,
)


def register(subparsers: Any) -> None:
    artifacts = subparsers.add_parser(
        "artifacts",
        help="the artifacts apps made: list them, show one",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = artifacts.add_subparsers(dest="artifacts_command", required=True, metavar="COMMAND")
    listing = commands.add_parser(
        "list",
        help="every artifact, oldest first: id, app, conversation, title, media type, size",
        description="Every artifact the apps made, oldest first: its id, app, conversation, "
        "title, media type, size and age.",
    )
    add_data_dir(listing)
    listing.add_argument("--conversation", metavar="ID", help="only this conversation's")
    listing.add_argument("--json", action="store_true", help="print the rows as JSON")
    listing.set_defaults(func=_list)
    show = commands.add_parser(
        "show",
        help="one artifact's record: app, instance, conversation, title, type, size, SHA-256",
        description="One artifact's whole record: its app, instance, conversation, title, "
        "media type, size, SHA-256 and when it was made. The content is not printed.",
    )
    add_data_dir(show)
    show.add_argument("artifact_id", metavar="ID", help="the artifact's id (art_...)")
    show.add_argument("--json", action="store_true", help="print the record as JSON")
    show.set_defaults(func=_show)


def _runtime_db(args: argparse.Namespace) -> Path | None:
    from actors.store import DB_FILE

    data_dir = data_dir_of(args)
    return data_dir if (data_dir / DB_FILE).is_file() else None


def _no_data(args: argparse.Namespace) -> int:
    return fail(
        f"no runtime data in {data_dir_of(args)} (no runtime.db); pass --data-dir with the "
        f"runtime's data dir (or set ${DATA_DIR_ENV}), or start the runtime there once with "
        "`lineup run`"
    )


def _when(at_ms: Any) -> str:
    if not isinstance(at_ms, int):
        return "?"
    seconds, millis = divmod(at_ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _list(args: argparse.Namespace) -> int:
    from actors.store import read_artifacts

    data_dir = _runtime_db(args)
    if data_dir is None:
        return _no_data(args)
    rows = read_artifacts(data_dir, conversation_id=args.conversation)
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        which = f" in conversation {args.conversation!r}" if args.conversation else ""
        print(f"no artifacts{which}")
        return 0
    print_table(
        f"artifacts{f' of conversation {args.conversation}' if args.conversation else ''}",
        ["id", "app", "conversation", "title", "media type", "size", "made"],
        [
            [
                row["artifact_id"],
                row["app_scope"],
                row["conversation_id"] or "",
                row["title"],
                row["media_type"],
                f"{row['size']:,} B",
                _when(row["created_ms"]),
            ]
            for row in rows
        ],
    )
    return 0


def _show(args: argparse.Namespace) -> int:
    from actors.store import read_artifact

    data_dir = _runtime_db(args)
    if data_dir is None:
        return _no_data(args)
    row = read_artifact(data_dir, args.artifact_id)
    if row is None:
        return fail(
            f"no artifact {args.artifact_id!r} in {data_dir}; `lineup artifacts list` shows "
            "the ones there are",
            code=1,
        )
    if args.json:
        print_json(row)
        return 0
    print_table(
        f"artifact {row['artifact_id']}",
        ["field", "value"],
        [
            ["app", row["app_scope"]],
            ["instance", row["instance_id"] or ""],
            ["conversation", row["conversation_id"] or ""],
            ["title", row["title"]],
            ["media type", row["media_type"]],
            ["size", f"{row['size']:,} bytes"],
            ["sha256", row["sha256"]],
            ["made", _when(row["created_ms"])],
        ],
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_subcommand(register, "artifacts", argv)


if __name__ == "__main__":
    sys.exit(main())
