"""The transport actor: the AppServer link.

`_actor` runs the link, with the token `actors.runtime_token` reads (from the user's keyring
or the data dir's 0600 file); `_lifecycle` maps link states to the runtime lifecycle.
What it takes, from whom and in what shape is its `door` (`lineup protocol messages --to
transport`): the router's word that the outbox has something new, and the tool router's
envelopes for the agent, each message acknowledged once the AppServer has given every
envelope in it a verdict.

It calls `router.inbound` {`items`: [[seq, JSON text]]} (each message's text exactly as
the AppServer sent it: the link reads stream frames with `raw_messages`), answered once
the run is durable and delivered; sends `store.outbox.settle` {`key`, `status`, `seq` /
`code` / `detail`}, `store.lifecycle.set` {`state`, `detail`} and `store.audit` (a refused
tool router envelope); and calls `store.cursor.get` and `store.outbox.pending`.

- **Batching across hops.** One kernel message carries a run of the stream (up to 512
  items / 600 KiB: `batch_items`, `batch_bytes`); at most 8 unpersisted batches are in
  flight (`inflight_batches`).
- **The cursor is acked after the commit.** The store writes the messages, the audit of
  rejections, the rejection envelopes (outbox) and the cursor in one transaction; the
  router's answer to the batch carries that cursor, which the transport acks to the
  AppServer.
  After a restart the transport syncs from the store's cursor.
- **Raw messages.** With `raw_messages`, a stream frame in the compact form is parsed once,
  its shell (keys, seqs rising, stamps, at most 256 items) checked as the frame models
  check it, and each message's exact text handed to the router, whose first step
  (`validate_message`) checks it in full: the text is decoded once, never re-encoded for
  the router. A message that fails that step is rejected and audited like any other; the
  rest of its frame stands. Any other frame, or another server's spelling, takes
  `validate_frame`.
- **Loading at start.** The transport (and the router) load from the store in a task
  started by `on_start` (a `call` from `on_start` itself is answered: replies reach an
  incarnation from its hello), so that their start is not held up by the store's; their
  handlers wait for the load.
- **Bounded catch-up.** The link holds at most `max_buffered` (4,096) received envelopes;
  its reader waits for the transport before it asks the AppServer for the next page, so a
  large backlog waits on the server, not in memory. The link's cursor advances only past
  envelopes handed on, so a connection lost mid-hand-off syncs them again.
- **Lifecycle.** The transport reports restoring / authenticating / synchronizing / online
  / reconnecting / offline_degraded (after 3 failed connects, or a definite refusal) to
  the store (`_lifecycle`); `lineup debug status` shows it as `lifecycle`, with the
  supervisor's own created / stopping / stopped, and `restoring` while the record predates
  the current run.
"""

from ._actor import TransportActor
from ._lifecycle import Lifecycle, lifecycle_of

__all__ = ["Lifecycle", "TransportActor", "lifecycle_of"]
