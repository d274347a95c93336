"""Who may ask the app manager for what, and what of a request an operation keeps.

The registry is managed by the user's side only: the operator (`lineup app ...`, sender
`debug`), the host and the app-registry app. Any app may navigate, but only within its
own conversations and instances, and it never picks the user's default app.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

from contracts import SCOPE_APP_REGISTRY, Code, ContractError

from ._focus import Focus
from ._registry import AppOperation

# Who may manage apps: the operator, the user's host and the app-registry app's process.
REQUESTERS: Final = frozenset({"debug", "host", f"app.{SCOPE_APP_REGISTRY}"})
# The tool router launches and brings forward the app a call needs, in any conversation;
# it never manages the registry.
NAVIGATORS: Final = frozenset({"tool_router"})
NAVIGATION: Final = frozenset({"launch", "focus", "close", "list", "open_default", "set_default"})
HOST_NAVIGATION: Final = {
    "open_app": "launch",
    "focus_app": "focus",
    "close_app": "close",
    "open_default_app": "open_default",
}
REQUEST_FIELDS: Final = frozenset(
    {
        "bundle",
        "confirmed",
        "accept_new_signer",  # the user re-trusts an update's new signer (`--accept-new-signer`)
        "conversation_id",
        "instance_id",
        "local",
        "entrypoint",
        "mode",  # a launch in the background (a tool's app that need not be seen)
    }
)
MAX_FIELD: Final = 1024


def request_fields(body: dict[str, Any]) -> dict[str, Any]:
    """What an operation keeps of its request: the known fields, short. A request comes
    from an app too, and its row is kept and loaded at every start."""
    kept: dict[str, Any] = {}
    for key in REQUEST_FIELDS & body.keys():
        value = body[key]
        kept[key] = value[:MAX_FIELD] if isinstance(value, str) else value
    return kept


def check_requester(sender: str, op: AppOperation, focus: Focus, core: Collection[str]) -> None:
    """The registry is managed by the user's side only (the operator, the host, the
    app-registry app); any app may navigate, within its own conversations; a core app
    (`core`: their scopes) anywhere."""
    if sender in REQUESTERS or (sender in NAVIGATORS and op.kind in NAVIGATION):
        return
    if not sender.startswith("app.") or op.kind not in NAVIGATION:
        raise ContractError(Code.SENDER_NOT_ALLOWED, f"{sender!r} cannot {op.kind} apps")
    caller = sender.removeprefix("app.")
    if caller in core or op.kind in ("list", "open_default"):
        return
    if op.kind == "set_default":  # the user's choice, made on the user's side only
        raise ContractError(Code.SENDER_NOT_ALLOWED, f"{caller!r} cannot choose the default app")
    if op.request.get("local") is not None:
        raise ContractError(Code.SENDER_NOT_ALLOWED, "an app cannot name another's instance")
    conversation = op.request.get("conversation_id")
    own = {i.conversation_id for i in focus.live_of(caller)}
    if op.kind == "launch" and conversation not in own:
        raise ContractError(
            Code.OWNERSHIP_MISMATCH,
            f"{caller!r} has no instance in conversation {conversation!r}",
        )
    target = focus.instances.get(str(op.request.get("instance_id")))
    if op.kind in ("focus", "close") and (target is None or target.app_scope != caller):
        raise ContractError(
            Code.OWNERSHIP_MISMATCH, f"{caller!r} may only {op.kind} its own instances"
        )
