"""The router's filter chain on single messages: every rejected golden fixture
gets its code, steps 2-7 run in order, and nothing rejected is delivered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actors import runtime_children
from actors.router import Accepted, FilterContext, Rejected, check_inbound
from contracts import Code, fixtures_dir

CORE = runtime_children.core_routing()  # the router's view of the core apps, before any other

REJECTED = sorted((fixtures_dir() / "envelopes" / "rejected").glob("*.json"))
# The router reads the stream with `validate_message`, like the AppServer: a canonical-looking
# message with a `lineup.v1.*` type goes to the legacy adapter, which finds it malformed.
ROUTER_CODE = {"legacy-type-as-canonical": "invalid_envelope"}
VALID = fixtures_dir() / "envelopes" / "valid"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@pytest.mark.parametrize("path", REJECTED, ids=lambda p: Path(p).stem)
def test_each_rejected_fixture_gets_its_code(path: Path) -> None:
    case = json.loads(path.read_text())
    verdict = check_inbound(7, _text(case["input"]), FilterContext.from_config(CORE))
    assert isinstance(verdict, Rejected)
    assert verdict.code == ROUTER_CODE.get(path.stem, case["code"])


def _agent_message(**changes: Any) -> dict[str, Any]:
    message = json.loads((VALID / "message.agent-to-chat.json").read_text())
    message.pop("correlation", None)
    for key, value in changes.items():
        message[key] = value
    return message


def test_a_good_agent_message_is_delivered_to_chat_and_associates_its_conversation() -> None:
    ctx = FilterContext.from_config(CORE)
    verdict = check_inbound(3, json.dumps(_agent_message()), ctx)
    assert isinstance(verdict, Accepted)
    assert (verdict.deliver_to, verdict.associates) == ("chat", verdict.env.sender.id)


def test_an_agent_outside_its_conversation_is_not_associated() -> None:
    ctx = FilterContext.from_config(CORE)
    message = _agent_message()
    ctx.conversations[message["scope"]["conversation_id"]] = "someone-else"
    verdict = check_inbound(3, json.dumps(message), ctx)
    assert isinstance(verdict, Rejected)
    assert verdict.code == Code.AGENT_NOT_ASSOCIATED


@pytest.mark.parametrize(
    ("apps", "code"),
    [
        ({}, Code.APP_NOT_INSTALLED),
        ({"chat": {"enabled": False, "subscriptions": ["lineup.message"]}}, Code.APP_DISABLED),
        ({"chat": {"subscriptions": []}}, Code.NOT_SUBSCRIBED),
    ],
)
def test_app_state_and_subscription_steps(apps: dict[str, Any], code: Code) -> None:
    verdict = check_inbound(3, json.dumps(_agent_message()), FilterContext.from_config(apps))
    assert isinstance(verdict, Rejected)
    assert verdict.code == code


def test_a_sequence_that_disagrees_with_the_frame_is_out_of_order() -> None:
    message = _agent_message(correlation={"sequence": 5})
    verdict = check_inbound(6, json.dumps(message), FilterContext.from_config(CORE))
    assert isinstance(verdict, Rejected)
    assert verdict.code == Code.OUT_OF_ORDER


def test_the_users_own_messages_are_history_not_deliveries() -> None:
    message = json.loads((VALID / "message.user-to-agent.json").read_text())
    verdict = check_inbound(4, json.dumps(message), FilterContext.from_config(CORE))
    assert isinstance(verdict, Accepted)
    assert verdict.deliver_to is None
