"""Bodies no SDK packs (nested past the bound, extension types, NaN and infinities, keys that
are not strings or come twice, integers past 64 bits, invalid UTF-8, trailing bytes, no map
at the top), sent raw by the hostile app to every type an app may send: each is refused at
the door with its code and counted against the app, and no core actor fails on one, even
once. The same shapes, and any bytes at all, meet the same refusal at the recipient's own
door, whose type checks raise nothing else."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from actors import runtime_children
from actors.kernel import PayloadError, load_door
from actors.kernel._door import APP_PREFIX
from actors.kernel._specs import AppLimits
from actors.kernel.actor_process._actor import message_from_frame
from actors.kernel.supervising._gate import Refusal, check_body
from tests.runtime.helpers import CONVERSATION, texts, wait_for
from tests.tools.helpers import Agent, finals, tools_of

from .app._body_attacks import BYTES_IN_JSON, SHAPES
from .conftest import SCOPE, Hostile

SENDER = f"app.{SCOPE}"


def _doors(children: list[dict[str, Any]]) -> dict[str, Any]:
    return {child["name"]: load_door(child.get("door")) for child in children}


def _targets(children: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Every (recipient, type) an installed app may send, from the doors of the runtime's
    own children: the catalogue the supervisor enforces."""
    return sorted(
        (name, message_type)
        for name, door in _doors(children).items()
        for message_type in door.types()
        if door.allows(message_type, SENDER)
    )


def _delivery(message_type: str, body: bytes) -> dict[str, Any]:
    return {"id": "m1", "type": message_type, "from": SENDER, "seq": 1, "body": body}


_CHILDREN = [child.model_dump() for child in runtime_children.default_config(web_port=0).children]
ALL_DOORS = _doors(_CHILDREN)
EVERY_TYPE = sorted((name, t) for name, door in ALL_DOORS.items() for t in door.types())


@pytest.mark.parametrize("label", sorted(SHAPES))
def test_the_supervisor_and_every_recipient_refuse_each_shape(label: str) -> None:
    body, code = SHAPES[label]
    with pytest.raises(Refusal) as refused:
        check_body(body, AppLimits())
    assert refused.value.code == code, refused.value
    # Defense in depth: had the supervisor let it through, every door refuses it as well,
    # with the same code, whatever the type (those only one app may send included).
    for name, message_type in EVERY_TYPE:
        with pytest.raises(PayloadError) as payload:
            message_from_frame(_delivery(message_type, body), ALL_DOORS[name].checks)
        assert payload.value.code == code, (name, message_type, payload.value.detail)


_plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200) | _plain.map(lambda v: msgpack.packb(v, use_bin_type=True)))
def test_no_body_raises_anything_but_a_refusal(data: bytes) -> None:
    try:
        check_body(data, AppLimits())
        passed = True
    except Refusal as refusal:
        assert refusal.code in ("invalid_payload", "too_deep", "too_large")
        passed = False
    for name, message_type in EVERY_TYPE:
        try:
            message_from_frame(_delivery(message_type, data), ALL_DOORS[name].checks)
        except PayloadError:
            continue
        # What a door lets a handler see, the supervisor let through too.
        assert passed, (name, message_type, data)


async def test_no_odd_body_breaks_a_core_actor(hostile: Hostile) -> None:
    stack = hostile.stack
    await stack.start_appserver()
    runtime = await stack.start_runtime()
    agent = await stack.start_agent()
    targets = _targets(runtime.config["children"])
    assert {("tool_router", "tool_router.report"), ("tool_router", "tool_router.deadline")} <= set(
        targets
    )
    restarts = hostile.restarts()
    await hostile.install({"attacks": ["odd_bodies"], "odd_bodies": {"targets": targets}})
    await hostile.launch()
    outcomes = (await hostile.wait_report(180))["results"]["odd_bodies"]["outcomes"]

    # Every one of them that was stored has been handled: no handler failed on one, no
    # actor died of one.
    await wait_for(
        lambda: (
            hostile.mailbox_rows(
                "SELECT count(*) FROM messages AS m WHERE sender = ? AND seq > coalesce("
                "(SELECT acked FROM cursors WHERE recipient = m.recipient), 0)",
                (SENDER,),
            )
            == [(0,)]
        ),
        60,
        "every message of the app handled",
    )
    assert hostile.mailbox_rows("SELECT count(*) FROM messages WHERE state = 3") == [(0,)]
    assert hostile.mailbox_rows(
        "SELECT count(*) FROM messages WHERE failures > 0 OR error IS NOT NULL"
    ) == [(0,)]
    now = hostile.restarts()
    assert {name: now[name] for name in restarts} == restarts

    for _, message_type in targets:
        for label, (_, code) in SHAPES.items():
            outcome = outcomes[f"{message_type} {label}"]
            assert outcome.startswith(f"refused:{code}:"), (message_type, label, outcome)
        # A map of fields no type declares passes the supervisor; its recipient refuses it
        # (the router answers an action by `app.action.state`, as it does every action).
        outcome = outcomes[f"{message_type} unknown fields"]
        answered = "accepted:null" if message_type == "router.action" else "refused:"
        assert outcome.startswith(answered), (message_type, outcome)

    for label in BYTES_IN_JSON:
        outcome = outcomes[f"bytes in {label}"]
        assert outcome.startswith("refused:invalid_payload:"), (label, outcome)

    # Each refusal, call and cast alike, counted against the app, by its code.
    refused = runtime.actors()[SENDER]["refused"]
    for code in ("invalid_payload", "too_deep"):
        shapes = sum(1 for _, shape_code in SHAPES.values() if shape_code == code)
        assert refused.get(code, 0) == 2 * shapes * len(targets), (code, refused)
    # And the runtime still serves: the agent's next message reaches the chat.
    await agent.send_text(CONVERSATION, "after")
    await wait_for(lambda: "after" in texts(stack.timeline()), 30, "the message after")


async def test_an_output_the_agent_cannot_be_given_ends_its_call(hostile: Hostile) -> None:
    """A result the door lets through (nested as deep as a body may be) that the agent's
    envelope cannot carry: the call ends `handler_failed` at once, as for an output its
    schema refuses, and the tool router handled the report without failing."""
    stack = hostile.stack
    client = await hostile.start_conversation()
    await hostile.install({"attacks": []})
    await wait_for(lambda: "hostile.answer" in tools_of(stack), 30, "its tool in the inventory")
    restarts = hostile.restarts()
    agent = Agent(stack, client, SCOPE)
    with trio.fail_after(20):  # its own timeout is a minute
        row = await agent.call("call_deep", "hostile.answer", arguments={"how": "deep_output"})
    assert (row["state"], row["code"]) == ("failed", "handler_failed"), row
    assert [e["payload"]["code"] for e in finals(stack, "call_deep")] == ["handler_failed"]
    audited = await stack.audited(lambda a: a["detail"].startswith("call_deep: "))
    assert [a["code"] for a in audited] == ["handler_failed"], audited
    assert hostile.mailbox_rows(
        "SELECT count(*) FROM messages WHERE failures > 0 OR state = 3"
    ) == [(0,)]
    now = hostile.restarts()
    assert {name: now[name] for name in restarts} == restarts


def _untyped(schema: Any, where: str) -> list[str]:
    """Where a pydantic core schema takes any value at all (a JSON value's own schema takes
    any value only when it reads JSON text, never Python values)."""
    if isinstance(schema, list):
        return [found for item in schema for found in _untyped(item, where)]
    if not isinstance(schema, dict):
        return []
    if schema.get("type") == "any":
        return [where]
    if schema.get("type") == "json-or-python":
        return _untyped(schema["python_schema"], where)
    return [
        found
        for key, value in schema.items()
        if key not in ("metadata", "serialization")
        for found in _untyped(value, f"{where}.{key}" if key == "fields" else where)
    ]


def test_what_an_app_fills_in_is_typed_to_the_last_value() -> None:
    """Every type an app may send (any app: the chat's and the settings' own included)
    declares each value an app fills in; free-form content is JSON, never `Any`."""
    from_apps = 0
    for name, door in ALL_DOORS.items():
        for message_type, rule in door.accepts.items():
            if not any(sender.startswith(APP_PREFIX) for sender in rule.senders):
                continue
            from_apps += 1
            assert rule.body is not None, (name, message_type)
            schema = TypeAdapter(rule.body).core_schema
            assert _untyped(schema, "body") == [], (name, message_type)
    assert from_apps >= len(_targets(_CHILDREN))
