"""`lineup app list | install | enable | ... | focus`: the app registry of a running runtime.

Each command (but `list`) asks the runtime's app manager for one operation and follows
it to its end: the request goes through the control socket, the operation's row in
`runtime.db` says how it went (`succeeded`, or `failed` / `rolled_back` with a code).
`list` reads the registry directly, so it also works with the runtime stopped.
Exit status: 0 succeeded; 1 refused or failed, said in one sentence with the next step (the
row with its code and detail under `--json`); 2 usage error or no runtime.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ._common import add_data_dir, data_dir_of, fail, print_json, print_table

WAIT_S = 120.0


def _operation(data_dir: Path, operation_id: str) -> dict[str, Any] | None:
    from actors.store import read_operation

    return read_operation(data_dir, operation_id)


def _request(args: argparse.Namespace, body: dict[str, Any]) -> int:
    from rich.console import Console

    from actors.kernel import ControlError, control_request, new_id

    data_dir = data_dir_of(args)
    operation_id = new_id()
    request = {"operation_id": operation_id, **body}
    try:
        control_request(
            data_dir,
            {
                "type": "send",
                "to": "app_manager",
                "message_type": "app_manager.request",
                "body": request,
            },
        )
    except ControlError as exc:
        return fail(f"the runtime is not answering: {exc}")
    console = Console(stderr=True, highlight=False)
    deadline = time.monotonic() + WAIT_S
    shown = ""
    with console.status(f"{body['kind']} …") as status:
        while True:
            op = _operation(data_dir, operation_id)
            if op is not None and op["state"] in ("succeeded", "failed", "rolled_back"):
                break
            if op is not None and op["step"] != shown:
                shown = op["step"]
                status.update(f"{body['kind']}: {shown} ({op['progress']} %)")
            if time.monotonic() > deadline:
                return fail(f"operation {operation_id} did not finish within {WAIT_S:.0f} s")
            time.sleep(0.02)  # an install takes ~30 ms: poll finely, one indexed row
    result = (op.get("request") or {}).get("result") or {}
    if args.json:
        print_json(
            {
                **{
                    k: op[k]
                    for k in ("operation_id", "kind", "app_scope", "state", "code", "detail")
                },
                "result": result,
            }
        )
    elif op["state"] == "succeeded":
        extra = " ".join(f"{k}={v}" for k, v in result.items())
        print(f"{op['kind']} {op['app_scope']}: succeeded {extra}".rstrip())
    else:
        print(refusal_sentence(op, data_dir))
    return 0 if op["state"] == "succeeded" else 1


def refusal_sentence(op: dict[str, Any], data_dir: Path) -> str:
    """A refused operation as one sentence for the user: what was refused, why (the
    operation's detail), and, for a refusal the user can act on, what to do next."""
    what = f"{op['kind']} {op['app_scope']}".rstrip()
    detail = str(op.get("detail") or "").rstrip(". ")
    code = str(op.get("code") or "")
    scope = op["app_scope"] or "APP"
    next_step = {
        "bundle_signer_changed": "pass --accept-new-signer if you trust the new publisher",
        "same_version": "an update needs a higher version number",
        "older_version": f"to go back, run `lineup app rollback --data-dir {data_dir} {scope}`",
        "bundle_scope_mismatch": f"use a bundle built for {scope}",
        "bundle_bad_path": "ask its publisher for a bundle built with `lineup app build`",
        "bundle_untrusted_key": f"if you trust its publisher, copy their .pub file into"
        f" {data_dir}/trusted_keys/ and try again",
        "already_installed": "to change its version, use `lineup app update`",
        "confirmation_required": "pass --yes to confirm that the app and its data go",
    }.get(code)
    if next_step is None:
        return f"{what}: {op['state'].replace('_', ' ')}: {detail} ({code})."
    return f"{what} refused: {detail}; {next_step}."


def _list(args: argparse.Namespace) -> int:
    from actors.app_manager import AppRecord
    from actors.store import read_apps

    registry = read_apps(data_dir_of(args))
    # The rows as the app manager reads them: the signers come out of the manifest column.
    records = [AppRecord.from_row(row).public() for row in registry["records"]]
    stack = registry["settings"].get("focus_stack", [])
    instances = [i for i in registry["instances"] if i["state"] not in ("closed", "failed")]
    if args.json:
        print_json(
            {
                "apps": records,
                "instances": instances,
                "focus_stack": stack,
                "default_app": registry["settings"].get("default_app"),
            }
        )
        return 0
    rows = [
        [
            r["app_scope"],
            r["kind"],
            r["installed_version"],
            r["previous_version"] or "",
            "yes" if r["enabled"] else "no",
            r["install_state"],
            r["signer_key_id"] or "",
        ]
        for r in records
    ]
    print_table("apps", ["app", "kind", "version", "previous", "enabled", "state", "signer"], rows)
    rows = [
        [
            i["instance_id"],
            i["state"],
            i["mode"],
            str(len(stack) - stack.index(i["instance_id"])) if i["instance_id"] in stack else "",
        ]
        for i in instances
    ]
    print_table("instances (1 = foreground)", ["instance", "state", "mode", "focus"], rows)
    return 0


def _command(kind: str, *fields: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        body: dict[str, Any] = {"kind": kind}
        for name in fields:
            value = getattr(args, name)
            if value is not None:
                body[name] = str(Path(value).resolve()) if name == "bundle" else value
        if kind == "remove":
            body["confirmed"] = bool(args.yes)
        if kind == "update" and args.accept_new_signer:
            body["accept_new_signer"] = True
        return _request(args, body)

    return run


def add_runtime_commands(commands: Any) -> None:
    listing = commands.add_parser("list", help="the apps, their instances and the focus stack")
    add_data_dir(listing)
    listing.add_argument("--json", action="store_true", help="print JSON, not tables")
    listing.set_defaults(func=_list)

    def command(name: str, kind: str, help: str, *fields: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = commands.add_parser(name, help=help)
        add_data_dir(parser)
        parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
        parser.set_defaults(func=_command(kind, *fields))
        return parser

    install = command("install", "install", "verify a signed bundle and install it", "bundle")
    install.add_argument("bundle", help="the bundle file (signed by a trusted key)")
    for name, help in (
        ("enable", "let an installed app run and receive messages"),
        ("disable", "stop new calls and close the app's instances"),
        ("rollback", "go back to the previous version"),
    ):
        command(name, name, help, "app_scope").add_argument("app_scope", metavar="APP")
    update = command(
        "update", "update", "install a newer signed bundle of an app", "app_scope", "bundle"
    )
    update.add_argument("app_scope", metavar="APP")
    update.add_argument("bundle", help="the new version's bundle file")
    update.add_argument(
        "--accept-new-signer",
        action="store_true",
        help="accept an update signed by another trusted key than the installed version"
        " (a new publisher, who inherits the app's data); the new key is then pinned",
    )
    remove = command(
        "remove", "remove", "close the app, delete its bundle and private data", "app_scope"
    )
    remove.add_argument("app_scope", metavar="APP")
    remove.add_argument("--yes", action="store_true", help="confirm: the app's data goes too")
    default = command(
        "set-default", "set_default", "the app the runtime opens at start", "app_scope"
    )
    default.add_argument("app_scope", metavar="APP")
    launch = command(
        "launch", "launch", "start an instance in the foreground", "app_scope", "conversation_id"
    )
    launch.add_argument("app_scope", metavar="APP")
    launch.add_argument("--conversation", dest="conversation_id", metavar="ID")
    for name, help in (("close", "close an instance"), ("focus", "bring an instance to the front")):
        command(name, name, help, "instance_id").add_argument("instance_id", metavar="INSTANCE")
