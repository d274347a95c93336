"""`lineup protocol`: check messages against the contracts and export their JSON Schemas.

`validate` is the contracts' validators behind a pipe: whoever implements a peer (an
AppServer, an agent, an app SDK) can feed it what their code produces and get the runtime's
verdict, the same code and detail the runtime itself would reply with. `schemas` writes the
JSON Schemas that docs/protocol.md points at; the committed copies are regenerated with
`lineup protocol schemas contracts/schemas`. `messages` lists what each actor takes,
from whom and with what body, read from the doors (`_protocol_messages`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._common import Parser, conversation_id, fail, os_error


def _emit(value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _check(kind: str, raw: bytes, conversation: str | None) -> dict[str, Any]:
    from contracts import (
        LegacyContext,
        encode_frame,
        validate_frame,
        validate_manifest,
        validate_message,
        validate_tool_descriptor,
    )

    checks: dict[str, Callable[[], Any]] = {
        "message": lambda: validate_message(
            raw, legacy_context=LegacyContext(conversation_id=conversation)
        ).to_dict(),
        "frame": lambda: json.loads(encode_frame(validate_frame(raw))),
        "manifest": lambda: validate_manifest(raw).model_dump(mode="json", exclude_none=True),
        "tool": lambda: validate_tool_descriptor(raw).model_dump(mode="json", exclude_none=True),
    }
    key = "envelope" if kind == "message" else kind
    return {"ok": True, key: checks[kind]()}


def _validate(args: argparse.Namespace) -> int:
    from contracts import MAX_FRAME_BYTES, MAX_MANIFEST_BYTES, ContractError

    # Reading one byte past the largest limit is enough to tell "too large" from "fits".
    raw = sys.stdin.buffer.read(max(MAX_FRAME_BYTES, MAX_MANIFEST_BYTES) + 1)
    try:
        result = _check(args.kind, raw, args.conversation)
    except ContractError as exc:
        _emit({"ok": False, **exc.to_dict()})
        return 1
    _emit(result)
    return 0


def _schemas(args: argparse.Namespace) -> int:
    try:
        return _write_schemas(args)
    except OSError as exc:
        return fail(os_error(exc))


def _write_schemas(args: argparse.Namespace) -> int:
    from contracts import diff_schemas, write_schemas

    directory = Path(args.dir)
    if args.check:
        problems = diff_schemas(directory)
        for problem in problems:
            print(problem)
        if problems:
            print(f"regenerate with: lineup protocol schemas {args.dir}", file=sys.stderr)
        return 1 if problems else 0
    written = write_schemas(directory)
    print(f"wrote {len(written)} schemas to {directory}")
    stale = [line for line in diff_schemas(directory) if line.startswith("unexpected")]
    for line in stale:
        print(f"{line} (no longer generated; delete it)", file=sys.stderr)
    return 0


def _messages(args: argparse.Namespace) -> int:
    from ._protocol_messages import ANY_APP, catalogue, fields_of, markdown

    entries = catalogue()
    if args.to:
        known = sorted({entry["to"] for entry in entries})
        if args.to not in known:
            return fail(f"no actor {args.to!r} takes messages: one of {', '.join(known)}")
        entries = [entry for entry in entries if entry["to"] == args.to]
    if args.json:
        _emit({"messages": entries})
        return 0
    if args.markdown:
        sys.stdout.write(markdown(entries))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="what each actor takes, and from whom", title_justify="left")
    table.add_column("to", no_wrap=True)
    table.add_column("type", no_wrap=True)  # a name is read whole, or not at all
    table.add_column("from")
    table.add_column("body")
    for entry in entries:
        senders = ["any app" if s == ANY_APP else s for s in entry["from"]]
        to = "each app" if entry["to"] == ANY_APP else entry["to"]
        table.add_row(to, entry["type"], ", ".join(senders), fields_of(entry["body"]))
    Console(highlight=False).print(table)
    return 0


def register(subparsers: Any) -> None:
    """Adds `protocol validate`, `protocol schemas` and `protocol messages` to the `lineup`
    command."""
    protocol = subparsers.add_parser(
        "protocol",
        help="validate messages against the contracts; export the JSON Schemas",
        description="Check messages, frames, manifests and tool descriptors against the "
        "contracts the runtime enforces, and export those contracts as JSON Schemas.",
    )
    commands = protocol.add_subparsers(dest="protocol_command", required=True, metavar="COMMAND")
    validate = commands.add_parser(
        "validate",
        help="validate one JSON document read from stdin",
        description="Read one JSON document on stdin and print the verdict as JSON: "
        '{"ok": true, "envelope": {...}} with the canonical form, or '
        '{"ok": false, "code": "...", "detail": "..."}. A message may be a RuntimeEnvelope '
        "or a legacy lineup.v1.* message, which is mapped to its canonical form. "
        "Exit status: 0 valid, 1 rejected.",
    )
    validate.add_argument(
        "--kind",
        choices=["message", "frame", "manifest", "tool"],
        default="message",
        help="what stdin holds: an envelope or legacy message (default), a wire frame, an "
        "app manifest, or a tool descriptor",
    )
    validate.add_argument(
        "--conversation",
        type=conversation_id,
        metavar="ID",
        help="the current conversation, used for legacy messages that name none",
    )
    validate.set_defaults(func=_validate)
    schemas = commands.add_parser(
        "schemas",
        help="write every JSON Schema into DIR",
        description="Write the JSON Schema (draft 2020-12) of every envelope, payload, "
        "manifest, tool descriptor, legacy message and wire frame into DIR, one file each.",
    )
    schemas.add_argument("dir", metavar="DIR", help="the directory to write (created if needed)")
    schemas.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list files in DIR that differ from the generated schemas and "
        "exit 1 if any do",
    )
    schemas.set_defaults(func=_schemas)
    messages = commands.add_parser(
        "messages",
        help="list the messages each actor takes, who may send them and their bodies",
        description="List every message type the runtime's actors and app processes take, "
        "as their doors declare it: who may send it (the operator, `debug`, may send every "
        "type) and the fields of its body (`name?` optional). With --json, each body's "
        "JSON Schema; with --markdown, the page docs/messages.md is.",
    )
    messages.add_argument("--to", metavar="ACTOR", help="only the messages ACTOR takes")
    shape = messages.add_mutually_exclusive_group()
    shape.add_argument(
        "--json", action="store_true", help="print JSON: the types with their bodies' schemas"
    )
    shape.add_argument(
        "--markdown", action="store_true", help="print a Markdown page: a table per actor"
    )
    messages.set_defaults(func=_messages)


def main(argv: list[str] | None = None) -> int:
    """Runs `protocol` on its own, as `python -m lineup.protocol_cmd ...`."""
    parser = Parser(prog="lineup")
    register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(["protocol", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
