"""`lineup settings show|grants|revoke|policy|default|mode|data`: what the runtime allows and
keeps for the user, and the user's changes to it, as the settings app shows them.

Each fact is asked of the actor that owns it, through the operator's control socket, with
the same message types the settings app sends (their doors admit the settings app and the
operator only): the capability gateway for the grants (`capability_gateway.grants`,
`.revoke`) and, for the operator alone, what would serve each capability now
(`.providers`); the tool router for the tool policy and each tool's visibility
(`tool_router.policy.get`, `.replace`: the router checks a new policy and refuses a broken
one, which is never written), the app manager for the default app, the chat app for the mode
a new conversation starts in (`app.interaction.settings`: text, `im`, or voice, `audio`), the store
for each app's session data, artifacts and diagnostics with the rule for how long they stay
(`store.app_data.overview`). So the CLI and the settings app show the same answers, and
neither reads a table or a policy file itself. A runtime must be running.

Exit status: 0 done; 1 refused (one sentence saying why and what to do next); 2 usage error
or no runtime. Also `python -m lineup.settings_cmd COMMAND [options]`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from ._common import (
    Unreached,
    add_data_dir,
    ask_actor,
    data_dir_of,
    did_you_mean,
    fail,
    local_time,
    print_json,
    print_table,
    run_subcommand,
    visible,
)

WAIT_S: Final = 30.0
# Who owns each fact the settings show, and the type that asks it (the settings app sends
# the same ones; their doors admit it and the operator only).
OWNERS: Final = {
    "grants": ("capability_gateway", "capability_gateway.grants"),
    "providers": ("capability_gateway", "capability_gateway.providers"),
    "revoke": ("capability_gateway", "capability_gateway.revoke"),
    "policy": ("tool_router", "tool_router.policy.get"),
    "set_policy": ("tool_router", "tool_router.policy.replace"),
    "apps": ("app_manager", "app_manager.request"),
    "data": ("store", "store.app_data.overview"),
    "mode": ("app.chat", "app.interaction.settings"),
}
# The chat's modes, as the settings say them.
MODE_WORDS: Final = {
    "im": "text (im): the agent's messages are shown",
    "audio": "voice (audio): the agent's messages are spoken, and the user may talk",
}


class Refused(Exception):
    """The owner refused the request, or could not be asked: one sentence for the user."""

    def __init__(self, sentence: str, exit_code: int = 1, detail: str = "") -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.exit_code = exit_code
        self.detail = detail or sentence  # the owner's own words, when it refused


def register(subparsers: Any) -> None:
    settings = subparsers.add_parser(
        "settings",
        help="grants, the tool policy, the default app, each app's data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = settings.add_subparsers(dest="settings_command", required=True, metavar="COMMAND")

    def command(name: str, help: str, description: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = commands.add_parser(
            name, help=help, description=description
        )
        add_data_dir(parser)
        parser.add_argument("--json", action="store_true", help="print the answers as JSON")
        return parser

    show = command(
        "show",
        "everything: grants, providers, the tool policy, the default app and mode, each app's data",
        "Everything the settings app shows: the capability grants in force, the tool "
        "policy with how many tools each conversation's agent sees, the default app, the "
        "mode new conversations start in, and "
        "each app's session data, artifacts and diagnostics with the retention rule; and "
        "what on this host would serve each capability now (a notification: the desktop's "
        "notification service, an open page, or the terminal chat).",
    )
    show.set_defaults(func=_show)
    grants = command(
        "grants",
        "the capability grants in force: app, capability, how long, since when",
        "The capability grants in force, as the capability gateway holds them: the app, "
        "the capability, how long the grant lasts (session or always) and when it was given.",
    )
    grants.set_defaults(func=_grants)
    revoke = command(
        "revoke",
        "take back an app's grant of a capability",
        "Take back the grant of CAPABILITY to APP: the app asks the user again next time.",
    )
    revoke.add_argument("app", metavar="APP", help="the app holding the grant, as `grants` shows")
    revoke.add_argument(
        "capability", metavar="CAPABILITY", help="the capability granted, as `grants` shows"
    )
    revoke.set_defaults(func=_revoke)
    policy = command(
        "policy",
        "the tool policy and each tool's visibility; --set FILE replaces it",
        "The tool policy (allow and deny rules; deny beats allow) and, per conversation, "
        "every installed tool with whether the agent sees it and why. With --set FILE, the "
        "tool router checks the policy in FILE and puts it in force at once; a policy it "
        "cannot use is refused and nothing changes.",
    )
    policy.add_argument(
        "--set",
        dest="policy_file",
        type=Path,
        metavar="FILE",
        help='a JSON file with the new policy, e.g. {"deny": ["pomodoro/*"]}',
    )
    policy.set_defaults(func=_policy)
    default = command(
        "default",
        "make APP the app that opens when the runtime starts",
        "Make APP the default app: the one in front when the runtime starts with nothing "
        "else to restore (chat when it is unset or cannot be used).",
    )
    default.add_argument("app", metavar="APP", help="an installed, enabled app")
    default.set_defaults(func=_default)
    mode = command(
        "mode",
        "the mode new conversations start in: im (text) or audio (voice); MODE sets it",
        "The mode a new conversation starts in: im (text) or audio (voice: the agent's "
        "messages are spoken, and the user may talk). With MODE, it becomes the setting; "
        "conversations that have begun keep their own (switch one in the page's header or "
        "with /mode in the terminal chat).",
    )
    mode.add_argument(
        "mode", metavar="MODE", nargs="?", choices=sorted(MODE_WORDS), help="im or audio"
    )
    mode.set_defaults(func=_mode)
    data = command(
        "data",
        "each app's session data, artifacts and diagnostics, and how long they stay",
        "Per app: its session data (instances, revisions, bytes), its artifacts (count, "
        "bytes) and what it last said of its health, with the rule for how long they stay.",
    )
    data.add_argument("app", metavar="APP", nargs="?", help="only this app (default: every app)")
    data.set_defaults(func=_data)


# -- asking the owners ------------------------------------------------------------------------


def _ask(data_dir: Path, what: str, body: dict[str, Any]) -> dict[str, Any]:
    """The owner's answer to the settings request `what`; `Refused` with one sentence if it
    refused or could not be reached."""
    to, message_type = OWNERS[what]
    try:
        answer = ask_actor(data_dir, to, message_type, body, WAIT_S)
    except Unreached as exc:
        raise Refused(str(exc), exc.code) from None
    if answer.get("outcome") == "handled":
        return dict(answer.get("reply") or {})
    if answer.get("outcome") == "refused":
        detail = str(answer.get("detail") or answer.get("code"))
        raise Refused(
            f"{to.replace('_', ' ')} refused: {detail} ({answer.get('code')})", detail=detail
        )
    why = str(answer.get("detail") or answer.get("error") or answer.get("outcome"))
    raise Refused(f"{to.replace('_', ' ')} did not answer: {why}; see `lineup debug status`")


def _app_list(data_dir: Path) -> dict[str, Any]:
    """The app manager's list: `apps` and `default_app`."""
    row = _ask(data_dir, "apps", {"kind": "list"})
    return dict((row.get("request") or {}).get("result") or {})


def _run(args: argparse.Namespace, body: Callable[[Path], int]) -> int:
    """`body` on the command's data dir; a refusal is its one sentence and exit status."""
    try:
        return int(body(data_dir_of(args)))
    except Refused as refused:
        return fail(refused.sentence, refused.exit_code)


# -- what each command prints -------------------------------------------------------------------


def _bytes(count: Any) -> str:
    size = int(count or 0)
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


def _print_grants(grants: list[dict[str, Any]]) -> None:
    if not grants:
        print("no capability grants: every app asks the user before a capability is used")
        return
    print_table(
        "capability grants",
        ["app", "capability", "lasts", "granted"],
        [
            [
                g.get("app_scope"),
                g.get("capability"),
                g.get("scope"),
                local_time(g.get("granted_ms")),
            ]
            for g in grants
        ],
    )


def _rule(rule: Any) -> str:
    if isinstance(rule, dict):
        return " ".join(f"{k}={v}" for k, v in rule.items())
    return str(rule)


def _print_policy(view: dict[str, Any], *, tools: bool) -> None:
    if view.get("broken"):
        print(visible(f"tool policy: cannot be used, so every tool is hidden: {view['broken']}"))
    elif not view.get("exists"):
        print("tool policy: none (tool_policy.json is absent): every tool is allowed")
    else:
        policy = view.get("policy") or {}
        allow, deny = policy.get("allow"), policy.get("deny") or []
        print(
            "tool policy: "
            + (f"{len(allow)} allow rule(s)" if allow is not None else "no allow list")
            + f", {len(deny)} deny rule(s); deny beats allow"
        )
        rows = [["allow", _rule(r)] for r in allow or []] + [["deny", _rule(r)] for r in deny]
        if rows:
            print_table("", ["rule", "matches"], rows)
    for inventory in view.get("inventories") or []:
        visibility = inventory.get("visibility") or []
        shown = sum(1 for entry in visibility if entry.get("visible"))
        print(
            visible(
                f"{inventory.get('conversation_id')}: revision {inventory.get('revision')},"
                f" {shown} of {len(visibility)} installed tools visible to the agent"
            )
        )
        if tools and visibility:
            print_table(
                "",
                ["app", "method", "visible", "reason"],
                [
                    [
                        e.get("app_scope"),
                        e.get("method"),
                        "yes" if e.get("visible") else "no",
                        e.get("reason"),
                    ]
                    for e in visibility
                ],
            )
    left_off = int(view.get("inventories_left_off") or 0)
    if left_off:
        print(f"({left_off} conversation(s) published longer ago are not shown)")


def _health(diagnostics: dict[str, Any] | None) -> str:
    if not diagnostics or not diagnostics.get("health"):
        return ""
    detail = diagnostics.get("detail")
    return f"{diagnostics['health']} ({detail})" if detail else str(diagnostics["health"])


def _print_data(overview: dict[str, Any]) -> None:
    rows = []
    for app in overview.get("apps", []):
        session, artifacts = app.get("session_data") or {}, app.get("artifacts") or {}
        diagnostics = app.get("diagnostics") or {}
        rows.append(
            [
                app.get("app_scope"),
                session.get("instances"),
                session.get("revisions"),
                _bytes(session.get("bytes")),
                artifacts.get("count"),
                _bytes(artifacts.get("bytes")),
                _health(diagnostics),
                diagnostics.get("events_total", 0),
            ]
        )
    print_table(
        "each app's data (health is the app's own word)",
        [
            "app",
            "instances",
            "revisions",
            "session data",
            "artifacts",
            "artifact bytes",
            "health",
            "events",
        ],
        rows,
    )
    print(overview.get("retention", ""))


# -- the commands ---------------------------------------------------------------------------


def _show(args: argparse.Namespace) -> int:
    def body(data_dir: Path) -> int:
        parts: dict[str, Any] = {}
        problems: dict[str, str] = {}
        for name, ask in (
            ("grants", lambda: _ask(data_dir, "grants", {}).get("grants", [])),
            ("providers", lambda: _ask(data_dir, "providers", {}).get("providers", [])),
            ("policy", lambda: _ask(data_dir, "policy", {})),
            ("default_app", lambda: _app_list(data_dir).get("default_app")),
            ("default_mode", lambda: _ask(data_dir, "mode", {}).get("default_mode")),
            ("data", lambda: _ask(data_dir, "data", {})),
        ):
            try:
                parts[name] = ask()
            except Refused as refused:
                if refused.exit_code == 2:  # no runtime: nothing else will answer either
                    raise
                problems[name] = refused.sentence
        if args.json:
            print_json({**parts, "problems": problems})
            return 1 if problems else 0
        if "grants" in parts:
            _print_grants(parts["grants"])
        if "providers" in parts:
            print_table(
                "what serves each capability now",
                ["capability", "served by"],
                [[p.get("capability"), p.get("by")] for p in parts["providers"]],
            )
        if "policy" in parts:
            _print_policy(parts["policy"], tools=False)
        if "default_app" in parts:
            print(f"default app: {parts['default_app'] or 'none (chat opens)'}")
        if "default_mode" in parts:
            print(f"new conversations start in {MODE_WORDS.get(str(parts['default_mode']), '?')}")
        if "data" in parts:
            _print_data(parts["data"])
        for name, sentence in problems.items():
            fail(f"{name}: {sentence}")
        return 1 if problems else 0

    return _run(args, body)


def _grants(args: argparse.Namespace) -> int:
    def body(data_dir: Path) -> int:
        grants = _ask(data_dir, "grants", {}).get("grants", [])
        if args.json:
            print_json(grants)
        else:
            _print_grants(grants)
        return 0

    return _run(args, body)


def _revoke(args: argparse.Namespace) -> int:
    def body(data_dir: Path) -> int:
        grants = _ask(data_dir, "grants", {}).get("grants", [])
        held = {(g["app_scope"], g["capability"]) for g in grants}
        if (args.app, args.capability) not in held:
            raise Refused(_nothing_to_revoke(data_dir, args.app, args.capability, grants))
        result = _ask(data_dir, "revoke", {"app_scope": args.app, "capability": args.capability})
        if args.json:
            print_json({"app_scope": args.app, "capability": args.capability, **result})
        elif result.get("revoked"):
            print(f"revoked {args.capability} for {args.app}: it asks the user again next time")
        else:
            raise Refused(f"nothing to revoke: {args.app} no longer holds {args.capability}")
        return 0

    return _run(args, body)


def _nothing_to_revoke(
    data_dir: Path, app: str, capability: str, grants: list[dict[str, Any]]
) -> str:
    """Why there is no such grant, with the closest name the user may have meant."""
    apps = {str(a.get("app_scope")) for a in _app_list(data_dir).get("apps", [])}
    if app not in apps:
        return f"no app {app!r} is installed{did_you_mean(app, apps)}"
    own = [str(g["capability"]) for g in grants if g["app_scope"] == app]
    if not own:
        return f"nothing to revoke: {app} holds no capability grant (`lineup settings grants`)"
    return f"nothing to revoke: {app} holds no grant of {capability!r}" + did_you_mean(
        capability, own
    )


def _policy(args: argparse.Namespace) -> int:
    def body(data_dir: Path) -> int:
        if args.policy_file is not None:
            return _set_policy(data_dir, args.policy_file, args.json)
        view = _ask(data_dir, "policy", {})
        if args.json:
            print_json(view)
        else:
            _print_policy(view, tools=True)
        return 0

    return _run(args, body)


def _set_policy(data_dir: Path, path: Path, as_json: bool) -> int:
    try:
        policy = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror or exc}", 2) from None
    except UnicodeDecodeError:
        raise Refused(f"{path} is not UTF-8 text; write the policy as JSON", 2) from None
    except json.JSONDecodeError as exc:
        raise Refused(
            f"{path} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg});"
            " nothing changed",
            2,
        ) from None
    if not isinstance(policy, dict):
        raise Refused(f"{path} must hold a JSON object with allow and deny rules", 2)
    try:
        result = _ask(data_dir, "set_policy", {"policy": policy})
    except Refused as refused:
        if refused.exit_code == 2:
            raise
        raise Refused(
            f"the policy in {path} was refused, nothing changed: {refused.detail};"
            " fix the file and run this again"
        ) from None
    if as_json:
        print_json(result)
        return 0
    revisions = result.get("revisions") or {}
    changed = "no conversation's tools changed" if not revisions else "the agent is given"
    print(f"tool policy replaced from {path}; in force now: {changed}")
    for conversation, revision in revisions.items():
        print(visible(f"  {conversation}: inventory revision {revision}"))
    return 0


def _default(args: argparse.Namespace) -> int:
    # The app manager's operation, followed to its end and its refusal said (with a "did
    # you mean") exactly as `lineup app set-default` does.
    from .app_runtime_cmd import _request

    return _request(args, {"kind": "set_default", "app_scope": args.app})


def _mode(args: argparse.Namespace) -> int:
    def body(data_dir: Path) -> int:
        asked = {"default_mode": args.mode} if args.mode else {}
        mode = str(_ask(data_dir, "mode", asked).get("default_mode"))
        if args.json:
            print_json({"default_mode": mode})
        else:
            print(f"new conversations start in {MODE_WORDS.get(mode, mode)}")
        return 0

    return _run(args, body)


def _data(args: argparse.Namespace) -> int:
    def body(data_dir: Path) -> int:
        overview = _ask(data_dir, "data", {})
        if args.app is not None:
            scopes = [str(a["app_scope"]) for a in overview.get("apps", [])]
            if args.app not in scopes:
                raise Refused(f"no app {args.app!r} is installed{did_you_mean(args.app, scopes)}")
            overview = {
                **overview,
                "apps": [a for a in overview["apps"] if a["app_scope"] == args.app],
            }
        if args.json:
            print_json(overview)
        else:
            _print_data(overview)
        return 0

    return _run(args, body)


def main(argv: list[str] | None = None) -> int:
    return run_subcommand(register, "settings", argv)


if __name__ == "__main__":
    raise SystemExit(main())
