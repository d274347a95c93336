"""The transport's runs for the router: the runtime's own envelopes coming back in the
stream wait, up to `OWN_ECHO_WAIT_S`, for what comes next and go with it; anything else
goes at once. Driven on a real trio channel, the link's own `messages`, with trio's
autojump clock standing in for the wait."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import trio
import trio.testing

from actors.transport._actor import OWN_ECHO_WAIT_S, TransportActor
from link import Received


def _received(seq: int, message_id: str) -> Received:
    message = {"id": message_id}
    return Received(seq=seq, message=message, text=f'{{"id":"{message_id}"}}')


def _transport() -> Any:
    """What `_gather` reads of its transport: the ids it submitted and its batch bounds."""
    return SimpleNamespace(
        own_ids={"mine-1": None, "mine-2": None}, batch_items=512, batch_bytes=600 * 1024
    )


async def _gather(first: Received, later: list[tuple[float, Received]]) -> tuple[list[int], float]:
    """The seqs of the run `first` starts while `later` arrive at their moments, and how
    long the run waited."""
    send, receive = trio.open_memory_channel[Received](16)
    link = SimpleNamespace(messages=receive)
    async with trio.open_nursery() as nursery:

        async def feed() -> None:
            for at, received in later:
                await trio.sleep_until(start + at)
                await send.send(received)

        start = trio.current_time()
        nursery.start_soon(feed)
        items = await TransportActor._gather(_transport(), link, first)
        waited = trio.current_time() - start
        nursery.cancel_scope.cancel()
    return [seq for seq, _ in items], waited


async def test_an_echo_goes_with_what_comes_next(autojump_clock: trio.testing.MockClock) -> None:
    seqs, waited = await _gather(
        _received(1, "mine-1"), [(0.05, _received(2, "mine-2")), (0.1, _received(3, "agent"))]
    )
    assert seqs == [1, 2, 3] and waited < OWN_ECHO_WAIT_S


async def test_an_echo_alone_goes_after_the_wait(autojump_clock: trio.testing.MockClock) -> None:
    seqs, waited = await _gather(_received(1, "mine-1"), [(5.0, _received(2, "agent"))])
    assert seqs == [1] and OWN_ECHO_WAIT_S <= waited < 1.0


async def test_anything_else_goes_at_once(autojump_clock: trio.testing.MockClock) -> None:
    seqs, waited = await _gather(_received(1, "agent"), [(0.01, _received(2, "mine-1"))])
    assert seqs == [1] and waited == 0
