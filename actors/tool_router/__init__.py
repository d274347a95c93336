"""The tool_router actor: the tool inventory and the lifecycle of a tool call.

For now it runs under the supervisor and answers the kernel's statistics requests; its
handlers arrive with the issue named above.
"""

from actors.kernel import Actor

from .door import DOOR


class ToolRouterActor(Actor):
    door = DOOR


__all__ = ["ToolRouterActor"]
