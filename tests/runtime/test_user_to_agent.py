"""User → agent: the user's messages reach the agent exactly once and in order, also when
they were typed while the AppServer was down; the chat shows each as pending until the
AppServer accepts it."""

from __future__ import annotations

from actors.store import read_outbox_envelopes
from peers.agent import AgentClient

from .helpers import CONVERSATION, Stack, wait_for


async def _receive_user_texts(agent: AgentClient, count: int, into: list[str]) -> None:
    while len(into) < count:
        message = await agent.receive()
        if message.sender.kind == "user" and message.type == "lineup.message":
            into.append(message.payload().text)


async def test_user_messages_sent_while_the_appserver_is_down(stack: Stack) -> None:
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")  # opens the conversation
    await wait_for(lambda: len(stack.timeline()) == 1, 30, "the greeting in the chat")
    # The tool inventories (for new conversations, then this one's) are published and
    # accepted before the server goes.
    await wait_for(
        lambda: [e["type"] for e in stack.given()] == ["lineup.inventory"] * 2,
        30,
        "the inventories accepted",
    )

    # ...and their verdicts are back at the transport, which holds a submission until then
    # (else it submits them again on reconnect, and the AppServer counts a duplicate).
    def transport_holds() -> int:
        actors = {a["name"]: a for a in stack.control({"type": "actors"})["actors"]}
        return int(actors["transport"]["held"])

    await wait_for(lambda: transport_holds() == 0, 30, "the inventories' verdicts taken")

    await stack.stop_appserver()
    await stack.wait_lifecycle("offline_degraded")
    count = 20
    for n in range(count):
        stack.user_says(f"user {n}")
    await wait_for(lambda: len(stack.timeline()) == 1 + count, 30, "the local echoes")
    assert {item["state"] for item in stack.timeline()[1:]} == {"pending"}

    await stack.start_appserver()
    received: list[str] = []
    await _receive_user_texts(agent, count, received)
    assert received == [f"user {n}" for n in range(count)]

    def all_accepted() -> bool:
        return {item["state"] for item in stack.timeline()[1:]} == {"accepted"}

    await wait_for(all_accepted, 30, "every echo to be accepted")
    sent = read_outbox_envelopes(stack.data_dir)
    assert [e["_state"] for e in sent if e["type"] == "lineup.message"] == ["accepted"] * count
    # Besides the user's messages, the runtime published the conversation's tool inventory.
    inventories = sum(e["type"] == "lineup.inventory" for e in stack.given())
    assert stack.server is not None
    stats = stack.server.statistics()
    assert (stats.last_seq, stats.accepted, stats.duplicates) == (1 + count + inventories, count, 0)


async def test_user_messages_survive_a_kill_9_of_the_whole_runtime(stack: Stack) -> None:
    await stack.start_appserver()
    runtime = await stack.start_runtime()
    agent = await stack.start_agent()
    await agent.send_text(CONVERSATION, "hello")
    await wait_for(lambda: len(stack.timeline()) == 1, 30, "the greeting in the chat")
    await stack.stop_appserver()
    count = 30
    for n in range(count):
        stack.user_says(f"user {n}")
        if n == count // 2:
            await wait_for(lambda: len(stack.outbox()) >= 3, 30, "some items in the outbox")
    runtime.kill9()  # mid-stream: some inputs handled, some still in mailboxes
    await stack.start_appserver()
    await stack.start_runtime()
    received: list[str] = []
    await _receive_user_texts(agent, count, received)
    assert received == [f"user {n}" for n in range(count)]
    await wait_for(
        lambda: [i["state"] for i in stack.timeline()[1:]] == ["accepted"] * count,
        30,
        "every echo to be accepted",
    )
    inventories = sum(e["type"] == "lineup.inventory" for e in stack.given())
    assert stack.server is not None
    assert stack.server.statistics().last_seq == 1 + count + inventories
