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

from ._common import (
    DATA_DIR_ENV,
    add_data_dir,
    conversation_id,
    data_dir_of,
    did_you_mean,
    fail,
    no_runtime,
    print_json,
    print_table,
)
from .app_data_cmd import add_data_command

WAIT_S = 120.0
APP_HELP = "the app's name, as `lineup app list` shows it"


def _operation(data_dir: Path, operation_id: str) -> dict[str, Any] | None:
    from actors.app_manager.registry import read_operation

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
        from actors.kernel import supervisor_pid_alive

        if not supervisor_pid_alive(data_dir):
            return fail(no_runtime(data_dir))
        return fail(f"the runtime on {data_dir} did not take the request: {exc}")
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
        what = f"{_VERBS.get(op['kind'], op['kind'])} {_subject(op)}".rstrip()
        print(f"{what}: succeeded {extra}".rstrip())
    else:
        print(refusal_sentence(op, data_dir))
    return 0 if op["state"] == "succeeded" else 1


# The verb of each operation kind as a user types it.
_VERBS = {"set_default": "set-default"}
# A refusal's next step for the user, by code ({scope}, {data_dir}, {kind}, {verb} filled in).
_NEXT_STEPS = {
    "bundle_signer_changed": "pass --accept-new-signer if you trust the new publisher",
    "same_version": "an update needs a higher version number",
    "older_version": "to go back, run `lineup app rollback --data-dir {data_dir} {scope}`",
    "bundle_scope_mismatch": "use a bundle built for {scope}",
    "bundle_bad_path": "ask its publisher for a bundle built with `lineup app build`",
    "bundle_untrusted_key": "if you trust its publisher, copy their .pub file into"
    " {data_dir}/trusted_keys/ and try again",
    "already_installed": "to change its version, use `lineup app update`",
    "confirmation_required": "pass --yes to confirm that the app and its data go",
    "core_app_protected": "core apps stay; only installed apps can be changed this way",
    "no_previous_version": "there is no earlier version to go back to;"
    " install an older bundle with `lineup app update` if you need one",
    "app_not_installed": "see the installed apps with `lineup app list`, or install it"
    " with `lineup app install BUNDLE`",
    "app_disabled": "enable it first with `lineup app enable {scope}`",
    "instance_not_found": "see the open instances with `lineup app list`"
    " (an instance is APP:NAME, e.g. chat:main)",
    "invalid_state": "see its state with `lineup app list` and try again when it has settled",
    "bundle_missing": "check the bundle's path",
    "bundle_unreadable": "check that the bundle file can be read",
    "bundle_unsigned": "sign it with `lineup app sign BUNDLE --key KEY` first",
    "bundle_bad_signature": "the bundle was changed after signing;"
    " get a fresh copy from its publisher",
    "bundle_hash_mismatch": "the bundle was changed after signing;"
    " get a fresh copy from its publisher",
    "bundle_unlisted_file": "the bundle was changed after signing;"
    " get a fresh copy from its publisher",
    "bundle_missing_file": "the bundle is incomplete; get a fresh copy from its publisher",
    "bundle_malformed": "the file is not an app bundle;"
    " build one with `lineup app build` and sign it",
    "bundle_too_large": "the bundle is over the size limit; ask its publisher for a smaller one",
    "bundle_version_mismatch": "the bundle's version does not match its manifest;"
    " rebuild it with `lineup app build`",
    "invalid_entrypoint": "the app's entry point is wrong; rebuild it with `lineup app build`",
    "app_start_failed": "the end of {data_dir}/logs/app.{scope}.log says why"
    " (`lineup debug actors` shows its last exit)",
    "ownership_mismatch": "that instance belongs to another conversation;"
    " pass that conversation's id",
    "sender_not_allowed": "this operation is not allowed from here",
    "invalid_payload": "check the command's arguments with `lineup app {verb} --help`",
}


def _installed(data_dir: Path) -> list[str]:
    """The app scopes in the registry ([] when it cannot be read)."""
    from actors.app_manager.registry import read_apps

    try:
        return [str(row["app_scope"]) for row in read_apps(data_dir)["records"]]
    except Exception:  # a hint only: the refusal stands without it
        return []


def _subject(op: dict[str, Any]) -> str:
    """What an operation was about: its app, else the instance it named."""
    request = op.get("request") or {}
    return str(op.get("app_scope") or request.get("instance_id") or request.get("app_scope") or "")


def refusal_sentence(op: dict[str, Any], data_dir: Path) -> str:
    """A refused operation as one sentence for the user: what was refused, why (the
    operation's detail), and what to do next."""
    kind = str(op.get("kind") or "operation")
    verb = _VERBS.get(kind, kind)
    scope = str(op.get("app_scope") or "")
    subject = _subject(op)
    what = (
        f"{verb} {subject}" if subject else "install of the bundle" if kind == "install" else verb
    )
    detail = str(op.get("detail") or "").rstrip(". ")
    code = str(op.get("code") or "")
    if code == "core_app_protected":
        detail = f"{scope or 'it'} is a core app"
    template = _NEXT_STEPS.get(
        code, "see `lineup debug status` and {data_dir}/logs/ for what went wrong"
    )
    next_step = template.format(scope=scope or "APP", data_dir=data_dir, kind=kind, verb=verb)
    if code == "app_not_installed" and scope:
        suggestion = did_you_mean(scope, _installed(data_dir))
        if suggestion.startswith("; did you mean"):
            next_step = suggestion[2:] + " (`lineup app list` shows the installed apps)"
    instance = str((op.get("request") or {}).get("instance_id") or "")
    if code == "instance_not_found" and instance and ":" not in instance:
        next_step = (
            f"an instance is named APP:NAME, did you mean {instance}:main?"
            " (`lineup app list` shows the open ones)"
        )
    if code in _NEXT_STEPS:
        outcome, reason = "refused", detail
    else:
        outcome = "was undone" if op.get("state") == "rolled_back" else "failed"
        reason = f"{detail} ({code})" if code else detail
    return f"{what} {outcome}: {reason or code or 'no reason given'}; {next_step}."


def _list(args: argparse.Namespace) -> int:
    from actors.app_manager import AppRecord
    from actors.app_manager.registry import read_apps
    from actors.kernel import supervisor_pid_alive

    data_dir = data_dir_of(args)
    if not (data_dir / "runtime.db").exists():
        return fail(
            f"no runtime data in {data_dir} (no runtime.db); pass --data-dir with the"
            f" runtime's data dir, set ${DATA_DIR_ENV}, or start a runtime there with `lineup run`"
        )
    running = supervisor_pid_alive(data_dir)
    registry = read_apps(data_dir)
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
                "running": running,
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
    saved = "" if running else f" (saved state: no runtime is running on {data_dir})"
    print_table(
        f"apps{saved}", ["app", "kind", "version", "previous", "enabled", "state", "signer"], rows
    )
    rows = [
        [
            i["instance_id"],
            i["state"],
            i["mode"],
            str(len(stack) - stack.index(i["instance_id"])) if i["instance_id"] in stack else "",
        ]
        for i in instances
    ]
    print_table(f"instances (1 = foreground){saved}", ["instance", "state", "mode", "focus"], rows)
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
    add_data_command(commands)

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
        command(name, name, help, "app_scope").add_argument(
            "app_scope", metavar="APP", help=APP_HELP
        )
    update = command(
        "update", "update", "install a newer signed bundle of an app", "app_scope", "bundle"
    )
    update.add_argument("app_scope", metavar="APP", help=APP_HELP)
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
    remove.add_argument("app_scope", metavar="APP", help=APP_HELP)
    remove.add_argument("--yes", action="store_true", help="confirm: the app's data goes too")
    default = command(
        "set-default", "set_default", "the app the runtime opens at start", "app_scope"
    )
    default.add_argument("app_scope", metavar="APP", help=APP_HELP)
    launch = command(
        "launch", "launch", "start an instance in the foreground", "app_scope", "conversation_id"
    )
    launch.add_argument("app_scope", metavar="APP", help=APP_HELP)
    launch.add_argument(
        "--conversation",
        type=conversation_id,
        dest="conversation_id",
        metavar="ID",
        help="the conversation the instance serves",
    )
    for name, help in (("close", "close an instance"), ("focus", "bring an instance to the front")):
        command(name, name, help, "instance_id").add_argument(
            "instance_id",
            metavar="INSTANCE",
            help="the instance, APP:NAME as `lineup app list` shows it (e.g. chat:main)",
        )
