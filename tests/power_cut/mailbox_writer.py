"""The supervisor's mailbox at `synchronous=NORMAL`, taking messages until it is killed:
`python mailbox_writer.py DB`. Each message is one commit; after every fifth, the WAL is
synced (`sync_wal`, the barrier before anything leaves the device), and the number of
messages it covers printed: what the runtime may then tell the world."""

import sys

from actors.kernel import MailboxStore

store = MailboxStore(sys.argv[1], synchronous="NORMAL")
n = 0
while True:
    n += 1
    store.begin()
    store.insert(
        message_id=f"m{n}",
        recipient="store",
        sender="router",
        type="store.inbound.persist",
        frame=bytes(3000),
        inflight=False,
    )
    store.commit()
    if n % 5 == 0:
        store.sync_wal()
        print(n, flush=True)
