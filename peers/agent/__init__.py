"""Write an agent for LineUp: a client of the AppServer (docs/protocol.md §5), and a demo.

- `_client`: `AgentClient` on a `link.Link` with role `agent`: receive messages in order
  and once, keep the cursor and the latest inventory per conversation, send text, Markdown,
  task progress, choice / confirm / input requests (and withdraw them) and state patches
  to an app instance; call tools (`call()`, a `ToolCall` followed to its final result, many
  at once) and cancel them;
- `_demo`: `DemoAgent`, the deterministic conversation script, and `run_demo_agent`, which
  is what `lineup run` starts beside its embedded AppServer; `_questions`, the question it
  has open in each conversation, which it withdraws when the conversation moves on;
- `_sample_apps`: the script's use of the sample apps' tools (draw on the whiteboard, ask
  what it holds, export it, play draw-and-guess), with `_drawings`, the shapes it draws;
- `_recorder`: `Recorder`, an agent that appends what it sends and receives to a JSONL
  file on its own disk, and `UiRecorder`, the same for what a user types: the independent
  history a soak is checked against.

The link's names an agent meets (`LinkFailed` when the AppServer refuses it for good, ...)
are exported here too. `lineup agent send|demo|inventory|call` is lineup/agent_cmd.py.

`peers.agent.mcp` (not imported here: it needs the optional MCP SDK) is `lineup agent mcp`,
an agent of this client for an MCP host.
"""

from link import Link, LinkFailed, LinkStatistics, Received, Submission

from ._client import (
    AgentClient,
    AgentError,
    AgentMessage,
    Sent,
    SubmitRejected,
    ToolCall,
    open_agent,
)
from ._demo import DemoAgent, run_demo_agent
from ._recorder import Recorder, UiRecorder

__all__ = [
    "AgentClient",
    "AgentError",
    "AgentMessage",
    "DemoAgent",
    "Link",
    "LinkFailed",
    "LinkStatistics",
    "Received",
    "Recorder",
    "Sent",
    "Submission",
    "SubmitRejected",
    "ToolCall",
    "UiRecorder",
    "open_agent",
    "run_demo_agent",
]
