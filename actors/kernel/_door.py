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
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ._body import INVALID, BodyRefused, read_app_body, read_app_value
from ._frames import DEFAULT_MAX_FRAME
from ._specs import DEEPEST_APP_BODY

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
