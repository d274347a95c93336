"""How many process hops one runtime call takes, read from the mailbox's own records.

Every hop between two of the runtime's processes is a durable message in `mailbox.db`, and
each one about the call carries its id in its frame: the agent's envelope as the transport
hands it to the router, the router's hand-over to the tool router, the call given to the
app, the app's report, the envelopes for the agent. The hops of one call are those
messages, in mailbox order, and the replies to any of them that were calls (a reply is a
hop back). Beside the path, and not counted: the chat's view of the call
(`app.tool.event`); the router's run for the store (`store.inbound.persist`, sent before
the hand-over to the tool router, which does not wait for its answer) and its answer to
the transport (the stream's ack); and the runtime's own envelopes about the call coming
back in the AppServer's stream, which the router keeps as the conversation's history (of
the runs of the agent's stream, only the one with its `lineup.tool.invoke` is the call's).
The file is read read-only while the runtime runs.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Final

import msgpack

from actors.kernel.wire import unpack_body

BESIDE_THE_PATH: Final = frozenset({"app.tool.event", "app.tool.events", "store.inbound.persist"})
STREAM: Final = "router.inbound"
INVOKE: Final = "lineup.tool.invoke"


def _invokes(frame: bytes, call_id: str) -> bool:
    """Whether a stream run holds the call's invoke: one item with both (the runtime's own
    envelopes about the call may come back in the run of the next call's invoke)."""
    body = unpack_body(msgpack.unpackb(frame, raw=False)["body"])
    return any(INVOKE in text and call_id in text for _, text in body["items"])


def call_hops(data_dir: Path, call_id: str) -> list[str]:
    """Each hop of the call `call_id`, as "sender → recipient type"."""
    path = data_dir / "mailbox.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        rows = db.execute(
            "SELECT id, sender, recipient, type, frame FROM messages WHERE instr(frame, ?) > 0"
            " ORDER BY seq",
            (call_id.encode(),),
        ).fetchall()
        hops: list[str] = []
        for message_id, sender, recipient, type_, frame in rows:
            if type_ in BESIDE_THE_PATH or (type_ == STREAM and not _invokes(frame, call_id)):
                continue
            hops.append(f"{sender} → {recipient} {type_}")
            if type_ == STREAM:
                continue
            answered = db.execute(
                "SELECT 1 FROM replies WHERE caller = ? AND request_id = ?", (sender, message_id)
            ).fetchone()
            if answered:
                hops.append(f"{recipient} → {sender} reply to {type_}")
    return hops
