"""§4.5: submissions are accepted exactly once per idempotency key; rejections are definite."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from contracts import MAX_ENVELOPE_BYTES, SubmitResult

from .conftest import StartAppServer
from .helpers import agent_text, envelope, raw_client, runtime_link, user_text


async def test_a_repeated_key_gets_the_stored_verdict_marked_duplicate_across_reconnects(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    message = user_text("once")
    token = server.credentials.runtime_token
    async with raw_client(server.url) as client:
        await client.hello(token)
        first = await client.submit(message)
        again = await client.submit(message)
    async with raw_client(server.url) as client:  # a new connection, the same device
        await client.hello(token)
        after_reconnect = await client.submit(message)
    assert isinstance(first, SubmitResult)
    assert (first.status, first.seq, first.duplicate) == ("accepted", 1, False)
    for repeat in (again, after_reconnect):
        assert isinstance(repeat, SubmitResult)
        assert (repeat.status, repeat.seq, repeat.duplicate) == ("accepted", 1, True)
    assert server.statistics().last_seq == 1
    assert (server.statistics().accepted, server.statistics().duplicates) == (1, 2)


async def test_another_key_for_an_accepted_envelope_id_is_rejected_duplicate(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver()
    message = user_text("once")
    async with raw_client(server.url) as client:
        await client.hello(server.credentials.runtime_token)
        await client.submit(message)
        other = await client.submit(message, key="another-key")
    assert isinstance(other, SubmitResult)
    assert (other.status, other.code) == ("rejected", "duplicate")
    assert server.statistics().last_seq == 1


async def test_keys_belong_to_one_peer(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    message = user_text("from laptop")
    token = server.credentials.runtime_token
    async with raw_client(server.url) as laptop, raw_client(server.url) as phone:
        await laptop.hello(token, peer_id="laptop")
        await phone.hello(token, peer_id="phone")
        assert (await laptop.submit(message)).status == "accepted"
        # The phone never submitted this key: its verdict is its own (the id is taken).
        result = await phone.submit(message)
    assert isinstance(result, SubmitResult)
    assert (result.status, result.code, result.duplicate) == ("rejected", "duplicate", False)


def _bad(mutate: Any) -> dict[str, Any]:
    message = user_text("bad")
    mutate(message)
    return message


@pytest.mark.parametrize(
    ("role", "message", "code"),
    [
        ("runtime", _bad(lambda m: m.pop("sender")), "invalid_envelope"),
        ("runtime", _bad(lambda m: m.update(v=2)), "unsupported_version"),
        ("runtime", _bad(lambda m: m.update(type="lineup.nope")), "unknown_type"),
        ("runtime", _bad(lambda m: m["scope"].pop("conversation_id")), "scope_missing"),
        (
            "runtime",
            _bad(lambda m: m["scope"].update(conversation_id="no spaces")),
            "scope_invalid",
        ),
        ("runtime", _bad(lambda m: m["target"].update(app_scope="whiteboard")), "scope_mismatch"),
        ("runtime", _bad(lambda m: m["payload"].update(text="")), "invalid_payload"),
        (
            "runtime",
            _bad(lambda m: m["payload"].update(text="x" * (MAX_ENVELOPE_BYTES + 1))),
            "too_large",
        ),
        # §4.5: the sender kind must be one the session's role may submit.
        ("runtime", agent_text("as the agent"), "sender_not_allowed"),
        ("agent", user_text("as a user"), "sender_not_allowed"),
        ("agent", agent_text("as another agent", agent="hermes"), "sender_not_allowed"),
        # A legacy message with no conversation, on a session that has none yet (§8).
        (
            "runtime",
            {
                "type": "lineup.v1.message",
                "id": "01KZB88PMGCPGG795TCKQSF4PW",
                "ts": "2026-08-06T10:00:26.962Z",
                "from": {"role": "user", "id": "alice"},
                "payload": {"text": "where?", "format": "plain"},
            },
            "scope_missing",
        ),
    ],
)
async def test_rejections_carry_the_contracts_code(
    start_appserver: StartAppServer, role: str, message: dict[str, Any], code: str
) -> None:
    server = await start_appserver()
    credentials = server.credentials
    token = credentials.runtime_token if role == "runtime" else credentials.agent_token
    async with raw_client(server.url) as client:
        await client.hello(token, role=role, peer_id="demo")
        result = await client.submit(message, key="key-1")
    assert isinstance(result, SubmitResult)
    assert (result.status, result.code, result.seq) == ("rejected", code, None)
    assert result.detail
    assert server.statistics().last_seq == 0


async def test_an_agent_posts_only_in_its_own_conversations(
    start_appserver: StartAppServer,
) -> None:
    server = await start_appserver(agents=["demo", "other"])
    tokens = server.credentials.agent_tokens
    async with raw_client(server.url) as runtime:
        await runtime.hello(server.credentials.runtime_token)
        # The account opens conv-1: it belongs to the default agent.
        assert (await runtime.submit(user_text("hi"))).status == "accepted"
    async with raw_client(server.url) as other:
        await other.hello(tokens["other"], role="agent", peer_id="other")
        refused = await other.submit(agent_text("me too", agent="other"))
        opened = await other.submit(agent_text("mine", conversation="conv-2", agent="other"))
        global_post = await other.submit(
            envelope(
                "lineup.message",
                {"text": "everyone"},
                conversation="runtime:global",
                sender=("agent", "other"),
                target=("app", "runtime"),
            )
        )
    assert isinstance(refused, SubmitResult) and refused.code == "agent_not_associated"
    assert isinstance(opened, SubmitResult) and opened.status == "accepted"
    assert isinstance(global_post, SubmitResult) and global_post.status == "rejected"
    async with raw_client(server.url) as demo:
        await demo.hello(tokens["demo"], role="agent", peer_id="demo")
        assert (await demo.submit(agent_text("answer"))).status == "accepted"
        intruder = await demo.submit(agent_text("intrude", conversation="conv-2"))
    assert isinstance(intruder, SubmitResult) and intruder.code == "agent_not_associated"


async def test_a_rejection_is_kept_for_its_key(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    async with raw_client(server.url) as client:
        await client.hello(server.credentials.runtime_token)
        first = await client.submit(agent_text("not mine to send"), key="k")
        # The same key again, even with a message that would pass: the same verdict.
        again = await client.submit(user_text("fine"), key="k")
    assert isinstance(first, SubmitResult) and isinstance(again, SubmitResult)
    assert (again.status, again.code, again.detail) == (first.status, first.code, first.detail)
    assert (first.duplicate, again.duplicate) == (False, True)


async def test_verdicts_come_in_submission_order(start_appserver: StartAppServer) -> None:
    server = await start_appserver()
    messages = [user_text(f"#{i}") for i in range(40)]
    messages[7] = agent_text("rejected in the middle")
    async with raw_client(server.url) as client:
        await client.hello(server.credentials.runtime_token)
        for message in messages:  # pipelined: all sent before any verdict is read
            await client.send(
                {"frame": "submit", "idempotency_key": message["id"], "message": message}
            )
        results = [await client.receive_kind("submit_result") for _ in messages]
    keys = [result.idempotency_key for result in results]  # type: ignore[union-attr]
    assert keys == [message["id"] for message in messages]
    accepted = [result.seq for result in results if result.status == "accepted"]  # type: ignore[union-attr]
    assert accepted == list(range(1, 40))


async def test_a_link_resubmits_after_reconnect_and_is_accepted_once(
    start_appserver: StartAppServer,
) -> None:
    # Every connection is cut after its 3rd frame: verdicts are lost in flight again and
    # again; the link resends with the same keys until it hears each one.
    server = await start_appserver(drop_every=3)
    messages = [user_text(f"#{i}") for i in range(30)]
    async with runtime_link(server, receive=False) as link:
        submissions = [link.enqueue(message) for message in messages]
        with trio.fail_after(30):
            results = [await submission.verdict() for submission in submissions]
    assert [result.seq for result in results] == list(range(1, 31))
    stats = server.statistics()
    assert stats.connections_dropped >= 5
    assert (stats.accepted, stats.last_seq) == (30, 30)
    assert stats.duplicates > 0
