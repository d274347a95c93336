"""The door: the message types an actor takes, who may send each, and the shape of its body.

Each actor package lists its door in one module (`door.py`), next to its handlers: a
`Door` maps every handled type to an `Accept` with the senders allowed to send it and the
body's declared type. Two places enforce it, each for what it can know:

- the supervisor, before a message is stored: the sender (its stamp, never a body field)
  must be allowed for the recipient and the type, or the message is refused, never stored
  and counted against the sender. An app process (`app.*`) reaches only what some door
  opens to apps, which is its SDK's surface;
- the actor, before its handler runs: every body is decoded inside a per-message guard,
  and one from outside the runtime's own actors (an app, the operator, a UI session) is
  validated against its declared type, so a body of the wrong shape is `invalid_payload`
  with the field named, never a crash of the recipient. The runtime's actors pack their
  bodies from the types their own code builds; validating those too cost the kernel's
  busiest path 5-8 % (`lineup bench kernel`), for no sender that could lie.

Senders are actor names, or `APPS` for any app process. The operator (`debug`, the user at
the 0600 control socket) may send every declared type of every door; nobody may send a
type that is not declared.

The actor class names its door (`door = DOOR`: a handled type that is not declared is an
error at import), and so does its child spec (`ChildSpec.door`, `module:ATTRIBUTE`); every
app process has the runtime's app door (`RuntimeConfig.app_door`, `apps/sdk/door.py`),
whatever the app manager's spec says. `tests/runtime/test_doors.py` holds every runtime
actor to it. A body's declared type is a `TypedDict`, closed to unknown keys, or `dict`. A
type an app may send declares every value the app fills in: free-form content (a result's
output, session data, an action) is pydantic's `JsonValue`, never `Any`, since an app's
body may carry bytes (an artifact's data) that no JSON encoder takes;
`tests/hostile/test_bodies.py` holds every such type to it.

Where each check stands, and what a refusal does:

- the supervisor, before the switchboard stores anything (`_gate`): the sender may send
  this type to this recipient; the recipient is a child (or an app that is not running,
  whose messages wait in its inbox) and its door allows it. Refused: never stored, never
  delivered; a `call` gets a `kernel.reply` error `sender_not_allowed` at once, a cast is
  dropped; counted per sender and code (`lineup debug actors --json`: `refused`), logged at
  most once in 10 s per sender;
- the supervisor, for an app's messages only: the body is a plain map within
  `RuntimeConfig.app_limits` (`_gate`, `_body`); refused the same way, with `too_large`,
  `too_deep` or `invalid_payload`;
- the actor, before its handler runs: every body decodes (inside the handler loop's guard,
  never in the reader); an app's is read again by the supervisor's rules (`app_body`); one
  from outside the runtime's own actors matches its declared type, by a check that raises
  nothing but its refusal. Refused: `invalid_payload` (or the rule's own code) with the
  field named (`ids: Input should be a valid list`) to a caller; the message is done
  either way and counted (`refused_bodies` in `statistics`); no handler runs, and the actor
  never crashes on it.

A UI session (`ui`, the user at the 0600 UI socket) is a sender of its own, allowed only by
the host's door. The supervisor's own notices (`kernel.actor_failed`) reach actors without
a door. An actor that declares no door (a test's or a bench's) takes anything from the
runtime's actors and the operator, and nothing from an app. The cost of the door on the
kernel's path is reported by `lineup bench kernel` as `authz_ratio`.

**What an app process may send** is its SDK's surface and nothing else; each recipient
checks the next rule itself:

- `router.action` to the router: only chat speaks for the user (`sender_not_allowed` back
  as `app.action.state`), then the action's own fields;
- `app_manager.request` to the app manager: its requester rules (registry changes from the
  user's side only; navigation within the app's own conversations); a request the app may
  not make is refused without an operation row;
- `tool_router.report` to the tool router: only the process of the call's app reports on
  it (`ownership_mismatch` otherwise, audited at most once per sender every ten seconds),
  the first final counts, an app's error codes only, the output held to its schema;
  nothing once the runtime holds the call until a deadline;
- `tool_router.deadline` to the tool router: through a running call of the app's own, its
  deadline operations in that call's conversation; or, named by its call, one of its own
  open deadline operations finished, paused, resumed or stopped for the user;
- `tool_router.interrupt` to the tool router: from `app.chat` only (the user's stop);
- `capability_gateway.request` (and `.withdraw`, `.stop` of its own requests) to the
  capability gateway: its checks and the user's consent; the answer to a consent card
  (`capability_gateway.consent`) only from the chat app or the host;
- `store.session_data.get` / `.replace` to the store: the data of the stamped scope only,
  for one of its live instances, within the session-data quotas, at the expected revision;
- `store.artifacts.create` / `.read` / `.list` and `store.diagnostics.report` to the store:
  rows and files of the stamped scope only, within their quotas; artifacts read back by
  their own app and the chat only;
- `web_host.surface.push` to the web host: a state patch or session-data revision for the
  surfaces of one of the sender's own live instances (`ownership_mismatch`,
  `instance_not_found` otherwise), a merged state within 256 KiB;
- `web_host.chat.changed` to the web host: from `app.chat` only, an empty body.

So an app cannot reach the transport, the host or another app at all, and reaches the
store only for rows of its own stamped scope in tables of their own: the cursor, the
outbox and the lifecycle are written only by their owners, and an audit row's source is
the stamp of the message that asked for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ._specs import DEEPEST_APP_BODY
from .wire import DEFAULT_MAX_FRAME, INVALID, BodyRefused, read_app_body, read_app_value

APPS = "app.*"  # any app process
OPERATOR = "debug"
UI = "ui"
APP_PREFIX = "app."


def from_outside(sender: str) -> bool:
    """Whether a sender's code is not the runtime's own: an app, the operator, a UI."""
    return sender.startswith(APP_PREFIX) or sender in (OPERATOR, UI)


class PayloadError(Exception):
    """A body that does not have its type's declared shape; says which field. Its code is
    `invalid_payload`, or `too_deep` / `too_large` for an app's body past the bounds."""

    def __init__(self, detail: str, code: str = INVALID) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code


def app_body(packed: bytes) -> dict[str, Any]:
    """An app's body, read by its recipient by the supervisor's rules (`_body`) before its
    type is checked: the supervisor refused whatever breaks them, and an actor does not
    count on that. Its bounds are the widest any runtime may set (`AppLimits`)."""
    body: dict[str, Any] = _read_from_app(read_app_body, packed)
    return body


def app_answer(packed: bytes) -> Any:
    """An app's answer to a call, read by the same rules; any value may be at its top."""
    return _read_from_app(read_app_value, packed)


def _read_from_app(reader: Callable[..., Any], packed: bytes) -> Any:
    try:
        # Nothing bigger than one frame can arrive, so only the nesting is bounded here.
        bound = DEFAULT_MAX_FRAME
        return reader(packed, max_depth=DEEPEST_APP_BODY, max_items=bound, max_len=bound)
    except BodyRefused as refused:
        raise PayloadError(refused.detail, refused.code) from None


@dataclass(frozen=True)
class Accept:
    """Who may send one message type, and how its body is checked (None: not checked)."""

    senders: frozenset[str]
    check: Callable[[Any], Any] | None = None
    body: Any = None  # the declared type `check` holds a body to


def accept(*senders: str, body: Any = None) -> Accept:
    """`accept("router", "transport", body=SomeTypedDict)`: a body type is anything pydantic
    validates (a TypedDict keeps the body a plain dict for the handler). What an app fills
    in is typed to the last value: free-form content is `JsonValue`, never `Any` (an `Any`
    would let bytes, which an app's body may carry, reach a JSON encoder)."""
    if not senders:
        raise ValueError("a message type needs at least one allowed sender")
    return Accept(frozenset(senders), _checker(body) if body is not None else None, body)


def _checker(body: Any) -> Callable[[Any], Any]:
    adapter = TypeAdapter(body)

    def check(value: Any) -> Any:
        """The body as its type has it, or PayloadError: never anything else, whatever
        the value (a validator that raised otherwise would fail the handler's message)."""
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "body"
            raise PayloadError(f"{where}: {first['msg']}") from None
        except Exception:
            raise PayloadError("body: its values cannot be read as its type") from None

    return check


class Door:
    def __init__(self, accepts: Mapping[str, Accept], *, open_to_all: bool = False) -> None:
        self.accepts = dict(accepts)
        self.open_to_all = open_to_all
        # Each type's body check, looked up once per delivery by the actor.
        self.checks = {t: rule.check for t, rule in self.accepts.items() if rule.check}

    def types(self) -> frozenset[str]:
        return frozenset(self.accepts)

    def allows(self, message_type: str, sender: str) -> bool:
        if self.open_to_all:
            # An actor that declares no door (a test's or a bench's) takes anything from
            # the runtime's own actors and the operator, and nothing from an app.
            return not sender.startswith(APP_PREFIX)
        rule = self.accepts.get(message_type)
        if rule is None:
            return False
        senders = rule.senders
        return (
            sender in senders
            or sender == OPERATOR
            or (APPS in senders and sender.startswith(APP_PREFIX))
        )

    def senders_of(self, message_type: str) -> frozenset[str]:
        rule = self.accepts.get(message_type)
        return rule.senders if rule is not None else frozenset()


OPEN_DOOR = Door({}, open_to_all=True)


def load_door(path: str | None) -> Door:
    """The door a child spec names (`module:ATTRIBUTE`), or the open door for none."""
    if not path:
        return OPEN_DOOR
    module, _, attribute = path.partition(":")
    door = getattr(importlib.import_module(module), attribute or "DOOR")
    if not isinstance(door, Door):
        raise TypeError(f"{path} is not a Door")
    return door
