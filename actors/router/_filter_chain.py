"""The router's filter chain, as pure functions over one inbound message.

The first failure decides, always as one `Code`. The steps, numbered as `Code` groups its
codes (the frame's sequence check of step 3 runs right after step 1, before step 2):

1. version / type / scope / size / schema — `validate_message` (legacy messages go through
   the legacy compatibility adapter on the way);
2. agent identity and conversation association — an agent speaks only in conversations
   associated with it (the first agent message of a conversation associates it);
3. id / sequence / cursor dedup — the frame's seq must agree with the envelope's
   `correlation.sequence`; id dedup against everything stored is the store's, in the same
   transaction as the insert (`store.inbound.persist` reports `duplicate`);
4. app installed and enabled (the app manager's routing view);
5. tools — an agent's tool call or cancel is handed to the tool router once persisted: it
   owns the inventory, so it checks the revision, the tool's visibility (which covers step
   4 for calls) and the arguments, and answers every call with exactly one final outcome;
6. ownership — an instance id must be one of the app's live instances;
7. subscriptions — the app's manifest subscriptions (`not_subscribed` otherwise);

then the router persists (step 8) and delivers (step 9). Messages from the runtime's own
side (user, app, host, runtime senders: our own submissions, echoed by the stream) are
stored as conversation history and never delivered as agent messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from contracts import (
    Code,
    ContractError,
    LegacyContext,
    RuntimeEnvelope,
    validate_message,
)

TOOL_TYPES: Final = frozenset({"lineup.tool.invoke", "lineup.tool.cancel"})


@dataclass(frozen=True, slots=True)
class AppRule:
    """What the router knows of an installed app: enough for steps 4, 6 and 7."""

    enabled: bool
    subscriptions: frozenset[str]
    instances: frozenset[str] = frozenset()


@dataclass(slots=True)
class FilterContext:
    apps: dict[str, AppRule]
    conversations: dict[str, str] = field(default_factory=dict)  # conversation → agent id

    @classmethod
    def from_config(cls, apps: Mapping[str, Mapping[str, Any]] | None) -> FilterContext:
        """From the routing view the app manager writes (or the supervisor's, of the core
        apps, in the router's config): {scope: {enabled, subscriptions, instances}}."""
        rules = {
            scope: AppRule(
                bool(app.get("enabled", True)),
                frozenset(app.get("subscriptions", ())),
                frozenset(app.get("instances", ())),
            )
            for scope, app in (apps or {}).items()
        }
        return cls(rules)


@dataclass(frozen=True, slots=True)
class Accepted:
    seq: int
    env: RuntimeEnvelope
    text: str
    deliver_to: str | None  # the app scope whose inbox gets it, None for history only
    associates: str | None = None  # an agent this message associates its conversation with
    to_tool_router: bool = False  # a tool call or cancel, for the tool router once stored


@dataclass(frozen=True, slots=True)
class Rejected:
    seq: int
    code: Code
    detail: str
    env: RuntimeEnvelope | None  # None when the message could not be read at all
    message_id: str | None = None


def check_inbound(seq: int, text: str | bytes, ctx: FilterContext) -> Accepted | Rejected:
    """Run steps 1-7 on one message of the AppServer stream."""
    try:
        # Step 1. The AppServer stamps a conversation into legacy messages it accepts.
        env = validate_message(text, legacy_context=LegacyContext(conversation_id=None))
    except ContractError as exc:
        return Rejected(seq, exc.code, exc.detail, None, _raw_id(text))
    sequence = env.correlation.sequence if env.correlation else None
    if sequence is not None and sequence != seq:
        return Rejected(seq, Code.OUT_OF_ORDER, f"sequence {sequence} != frame seq {seq}", env)
    if env.sender.kind != "agent":
        return Accepted(seq, env, _as_text(text), None)  # our own side, echoed: history
    return _check_agent(seq, env, _as_text(text), ctx)


def _check_agent(
    seq: int, env: RuntimeEnvelope, text: str, ctx: FilterContext
) -> Accepted | Rejected:
    conversation = env.scope.conversation_id
    # Step 2: identity and association.
    owner = ctx.conversations.get(conversation)
    if owner is not None and owner != env.sender.id:
        return Rejected(
            seq,
            Code.AGENT_NOT_ASSOCIATED,
            f"{env.sender.id!r} is not part of {conversation!r}",
            env,
        )
    associates = env.sender.id if owner is None else None
    # Step 5 comes first for tools: the tool router answers for the app's state itself.
    if env.type in TOOL_TYPES:
        return Accepted(seq, env, text, None, associates, to_tool_router=True)
    # Step 4: the target app.
    scope = env.target.app_scope
    rule = ctx.apps.get(scope)
    if rule is None:
        return Rejected(seq, Code.APP_NOT_INSTALLED, f"no app {scope!r} is installed", env)
    if not rule.enabled:
        return Rejected(seq, Code.APP_DISABLED, f"app {scope!r} is disabled", env)
    # Step 6: instance ownership.
    instance = env.scope.instance_id
    if instance is not None and instance not in rule.instances:
        return Rejected(
            seq, Code.OWNERSHIP_MISMATCH, f"{instance!r} is not an instance of {scope!r}", env
        )
    # Step 7: the app's subscriptions.
    if env.type not in rule.subscriptions:
        return Rejected(
            seq, Code.NOT_SUBSCRIBED, f"{scope!r} does not subscribe to {env.type}", env
        )
    return Accepted(seq, env, text, scope, associates)


def _as_text(text: str | bytes) -> str:
    return text if isinstance(text, str) else text.decode()


def _raw_id(text: str | bytes) -> str | None:
    """The id of a message that failed step 1, when it has a readable one (for the audit)."""
    try:
        value = json.loads(text).get("id")
    except (ValueError, AttributeError, TypeError, RecursionError):
        return None
    return value if isinstance(value, str) and len(value) <= 64 else None
