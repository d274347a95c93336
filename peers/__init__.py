"""The runtime's peers: programs that stand for the outside world, for `lineup run`'s
embedded default, the tests and the benchmarks.

- `appserver`: the reference AppServer, the far end of docs/protocol.md;
- `agent`: an agent's client of that AppServer, and the demo agent.

A peer knows the runtime only as a remote party does: it imports `contracts` (the
wire frames and the envelope) and `link` (the client end of the WebSocket), never the
kernel, an actor, an app or the command line (tests/runtime/test_boundaries.py). The
command line that runs them is `lineup appserver` / `lineup agent` (lineup/*_cmd.py).

They share one package, not two at the top of the tree, because one rule covers them and
their generic names stay out of the import namespace. `lineup run` embeds them
(`lineup/_embedded.py`), the tests and the benchmarks start them, and a real deployment has
neither.
"""
