"""The tool_router actor: the revisioned tool inventory and the lifecycle of a tool call
(`_actor.py`), which tools are visible and why (`_inventory.py`, `_policy.py`), getting a
call's app ready (`_activation.py`), calls the runtime holds until a deadline
(`_deadlines.py`, `_operations.py`)."""

from ._actor import ToolRouterActor
from ._policy import POLICY_FILE

__all__ = ["POLICY_FILE", "ToolRouterActor"]
