"""The tool_router actor: the tool inventory and call lifecycle of seed §7.

For now it runs under the supervisor and answers the kernel's statistics requests; its
handlers arrive with the issue named above.
"""

from actors.kernel import Actor

from .door import DOOR


class ToolRouterActor(Actor):
    door = DOOR


__all__ = ["ToolRouterActor"]
