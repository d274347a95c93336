"""`lineup capabilities list|revoke`: the user's grants of capabilities to apps.

`list` reads `runtime.db` read-only, so it works whether the runtime is running or not: each
grant's app, capability, scope (`once`: the last answer allowed one request only;
`session`: until the runtime restarts; `always`) and when it was given. `revoke APP
CAPABILITY` asks the running runtime's capability gateway (through the control socket) to
take one back: the app is asked again next time.

Also `python -m lineup.capabilities_cmd list|revoke [options]`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final

from ._common import (
    DATA_DIR_ENV,
    Unreached,
    add_data_dir,
    ask_actor,
    data_dir_of,
    fail,
    local_time,
    print_json,
    print_table,
    run_subcommand,
)

WAIT_S: Final = 10.0


def register(subparsers: Any) -> None:
    capabilities = subparsers.add_parser(
        "capabilities",
        help="what the user allowed apps to do: list the grants, revoke one",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = capabilities.add_subparsers(
        dest="capabilities_command", required=True, metavar="COMMAND"
    )
    listing = commands.add_parser(
        "list",
        help="each grant: app, capability, scope (once, session, always), when",
        description="Each grant the user gave: the app, the capability, its scope (once, "
        "session: until the runtime restarts, always) and when it was given.",
    )
    add_data_dir(listing)
    listing.add_argument("--json", action="store_true", help="print the rows as JSON")
    listing.set_defaults(func=_list)
    revoke = commands.add_parser(
        "revoke",
        help="take back an app's grant of one capability (the runtime must be running)",
        description="Take back the grant APP has for CAPABILITY: its next request asks the "
        "user again. The runtime must be running.",
    )
    add_data_dir(revoke)
    revoke.add_argument("app", metavar="APP", help="the app's name, as `list` shows it")
    revoke.add_argument("capability", metavar="CAPABILITY", help="the capability, e.g. file.save")
    revoke.add_argument("--json", action="store_true", help="print the answer as JSON")
    revoke.set_defaults(func=_revoke)


def _list(args: argparse.Namespace) -> int:
    from actors.capability_gateway import read_grants
    from actors.store import DB_FILE

    data_dir = data_dir_of(args)
    if not (data_dir / DB_FILE).is_file():
        return fail(
            f"no runtime data in {data_dir} (no {DB_FILE}); pass --data-dir with the runtime's"
            f" data dir (or set ${DATA_DIR_ENV}), or start the runtime there once with"
            " `lineup run`"
        )
    grants = read_grants(data_dir)
    if args.json:
        print_json(
            [{k: g[k] for k in ("app_scope", "capability", "scope", "granted_ms")} for g in grants]
        )
        return 0
    if not grants:
        print("no grants: no app has been allowed a capability")
        return 0
    rows = [
        [g["app_scope"], g["capability"], g["scope"], local_time(g["granted_ms"])] for g in grants
    ]
    print_table("capability grants", ["app", "capability", "scope", "granted"], rows)
    return 0


def _revoke(args: argparse.Namespace) -> int:
    data_dir: Path = data_dir_of(args)
    body = {"app_scope": args.app, "capability": args.capability}
    try:
        answer = ask_actor(
            data_dir, "capability_gateway", "capability_gateway.revoke", body, WAIT_S
        )
    except Unreached as exc:
        return fail(str(exc), exc.code)
    if answer.get("outcome") != "handled":
        detail = answer.get("detail") or answer.get("code") or answer.get("outcome")
        return fail(f"the capability gateway did not revoke it: {detail}")
    revoked = int((answer.get("reply") or {}).get("revoked") or 0)
    if args.json:
        print_json({"app_scope": args.app, "capability": args.capability, "revoked": revoked})
    elif revoked:
        print(f"revoked: {args.app} will be asked again before it uses {args.capability}")
    else:
        return fail(
            f"{args.app} has no grant for {args.capability}; `lineup capabilities list`"
            " shows the grants there are",
            1,
        )
    return 0 if revoked else 1


def main(argv: list[str] | None = None) -> int:
    return run_subcommand(register, "capabilities", argv)


if __name__ == "__main__":
    sys.exit(main())
