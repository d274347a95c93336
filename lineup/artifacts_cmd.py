"""`lineup artifacts list|show|save`: the artifacts apps made, as the runtime's store keeps
them, and the user's copy of one.

`list` and `show` read `runtime.db` read-only, so they work whether the runtime is running
or not: `list` shows every artifact (or a conversation's) with its app, title, media type
and size; `show` one artifact's whole record, its SHA-256 included. `save` asks the running
runtime's capability gateway (through the control socket) to save one into
`DATA_DIR/downloads/`, named after its title (or `--name`), made safe, never over another
file. An app's artifacts go when the app is removed; what the user saved stays.

Also `python -m lineup.artifacts_cmd list|show|save [options]`. The store is imported when
a command runs, so `lineup --help` does not load it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Final

from ._common import (
    DATA_DIR_ENV,
    Unreached,
    add_data_dir,
    ask_actor,
    conversation_id,
    data_dir_of,
    fail,
    print_json,
    print_table,
    run_subcommand,
)

WAIT_S: Final = 30.0


def register(subparsers: Any) -> None:
    artifacts = subparsers.add_parser(
        "artifacts",
        help="the artifacts apps made: list them, show one, save one",
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
    listing.add_argument(
        "--conversation", type=conversation_id, metavar="ID", help="only this conversation's"
    )
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
    save = commands.add_parser(
        "save",
        help="save one into DATA_DIR/downloads, named after its title (the runtime must run)",
        description="Save an artifact's content into DATA_DIR/downloads/ through the running "
        "runtime's capability gateway: named after its title (or --name), made safe to show, "
        "never over another file; the same bytes saved again under the same name are not "
        "written twice.",
    )
    add_data_dir(save)
    save.add_argument("artifact_id", metavar="ID", help="the artifact's id (art_...)")
    save.add_argument("--name", help="the file's name (default: the artifact's title)")
    save.add_argument("--json", action="store_true", help="print the answer as JSON")
    save.set_defaults(func=_save)


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


def _save(args: argparse.Namespace) -> int:
    data_dir: Path = data_dir_of(args)
    body = {"artifact_id": args.artifact_id}
    if args.name:
        body["name"] = args.name
    try:
        answer = ask_actor(
            data_dir, "capability_gateway", "capability_gateway.save_artifact", body, WAIT_S
        )
    except Unreached as exc:
        return fail(str(exc), exc.code)
    if answer.get("outcome") != "handled":
        if answer.get("code") == "artifact_not_found":
            return fail(
                f"no artifact {args.artifact_id!r} in {data_dir}; `lineup artifacts list` "
                "shows the ones there are",
                code=1,
            )
        detail = answer.get("detail") or answer.get("code") or answer.get("outcome")
        return fail(f"the artifact was not saved: {detail}; try again")
    saved = dict(answer.get("reply") or {})
    if args.json:
        print_json(saved)
        return 0
    print(f"saved as {data_dir / 'downloads' / str(saved.get('name'))}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_subcommand(register, "artifacts", argv)


if __name__ == "__main__":
    sys.exit(main())
