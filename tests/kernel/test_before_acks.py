"""An actor's `before_acks` runs before each ack it sends: what a handler left to send after
the messages behind it leaves before any of those messages is acked. Played over a real
socketpair, the test's side standing for the supervisor."""

from __future__ import annotations

import socket
from contextlib import aclosing
from typing import Any

import trio

from actors.kernel import Actor, Message, handles
from actors.kernel.actor_process import serve
from actors.kernel.wire import Channel, pack_body


class LeavesForLater(Actor):
    """Each item's word goes out only when its acks are due, as the tool router's
    envelopes waiting for a shared sync do."""

    def __init__(self) -> None:
        super().__init__()
        self.later: list[str] = []

    @handles("item")
    async def item(self, msg: Message[Any]) -> None:
        self.later.append(msg.id)

    async def before_acks(self) -> None:
        later, self.later = self.later, []
        for message_id in later:
            await self.cast("sink", "word", {"of": message_id}, id=f"word-{message_id}")


def _delivery(seq: int) -> dict[str, Any]:
    return {"v": 1, "id": f"m{seq}", "type": "item", "from": "producer", "seq": seq,
            "body": pack_body(None)}  # fmt: skip


async def test_what_is_left_for_later_leaves_before_the_acks() -> None:
    ours, theirs = socket.socketpair()
    supervisor, channel = Channel(ours), Channel(theirs)
    seen: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery, aclosing(supervisor.batches()) as batches:
        nursery.start_soon(supervisor.run_writer)
        nursery.start_soon(serve, LeavesForLater(), channel)

        async def until(kind: str) -> None:
            while not any(frame.get("type") == kind for frame in seen):
                seen.extend(await anext(batches))

        with trio.fail_after(10):
            await until("kernel.hello")
            await supervisor.send({"type": "kernel.welcome", "name": "later", "config": {}})
            await until("kernel.ready")
            supervisor.send_many([_delivery(seq) for seq in (1, 2, 3)])
            while sum(len(f.get("seqs", ())) for f in seen if f["type"] == "kernel.ack") < 3:
                seen.extend(await anext(batches))
        nursery.cancel_scope.cancel()
    ours.close()
    theirs.close()
    order = [
        f"ack {f['seqs']}" if f["type"] == "kernel.ack" else f["id"]
        for f in seen
        if f.get("type") == "kernel.ack" or f.get("id", "").startswith("word-")
    ]
    words = [item for item in order if item.startswith("word-")]
    assert words == ["word-m1", "word-m2", "word-m3"]
    first_ack = next(n for n, item in enumerate(order) if item.startswith("ack"))
    assert first_ack == 3, order  # every word before any ack
