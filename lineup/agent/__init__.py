"""Write an agent for LineUp: a client of the AppServer (docs/protocol.md §5), and a demo.

- `_link`: `Link`, one client's connection kept up across drops: hello, sync from a cursor,
  live delivery, acks, submissions resent until their verdict, heartbeats. Role-neutral;
- `_client`: `AgentClient` on a link with role `agent`: receive messages in order and once,
  keep the cursor, send text, Markdown, task progress, choice / confirm / input requests
  and tool calls;
- `_demo`: `DemoAgent`, the deterministic conversation script, and `run_demo_agent`, which
  is what `lineup run` starts beside its embedded AppServer;
- `_cli`: `lineup agent send` and `lineup agent demo`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._common import lazy_exports
from ._cli import register

if TYPE_CHECKING:
    from ._client import (
        AgentClient,
        AgentError,
        AgentMessage,
        Sent,
        SubmitRejected,
        open_agent,
    )
    from ._demo import DemoAgent, run_demo_agent
    from ._link import Link, LinkFailed, LinkStatistics, Received, Submission

# `lineup --help` needs only `register`: the client's modules load on first use.
_LAZY = {
    **dict.fromkeys(
        ["AgentClient", "AgentError", "AgentMessage", "Sent", "SubmitRejected", "open_agent"],
        "._client",
    ),
    **dict.fromkeys(["DemoAgent", "run_demo_agent"], "._demo"),
    **dict.fromkeys(["Link", "LinkFailed", "LinkStatistics", "Received", "Submission"], "._link"),
}


__getattr__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "AgentClient",
    "AgentError",
    "AgentMessage",
    "DemoAgent",
    "Link",
    "LinkFailed",
    "LinkStatistics",
    "Received",
    "Sent",
    "Submission",
    "SubmitRejected",
    "open_agent",
    "register",
    "run_demo_agent",
]
