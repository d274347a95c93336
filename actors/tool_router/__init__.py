"""The tool_router actor: the revisioned tool inventory and the lifecycle of a tool call
(`_actor.py`), which tools are visible and why (`_inventory.py`, `_policy.py`), getting a
call's app ready (`_activation.py`), calls the runtime holds until a deadline
(`_deadlines.py`, `_operations.py`). Its state is its own file, `tool_router.db` (`_db.py`),
written one step a transaction (`_steps.py`); `_reads.py` reads it for the command line,
read-only, and `_migration.py` moves the rows an older data dir kept in the store's file.
"""

from typing import TYPE_CHECKING

from actors.kernel import lazy_exports

# Each name loads on first use: the command line's reads import neither trio nor the
# contracts' models.
_LAZY = {
    "DB_FILE": "._db",
    "POLICY_FILE": "._policy",
    "ToolRouterActor": "._actor",
    "open_db": "._db",
    "read_inventories": "._reads",
    "read_tool_calls": "._reads",
    "read_tool_calls_about": "._reads",
    "read_tool_deadlines": "._reads",
}

if TYPE_CHECKING:
    from ._actor import ToolRouterActor
    from ._db import DB_FILE, open_db
    from ._policy import POLICY_FILE
    from ._reads import (
        read_inventories,
        read_tool_calls,
        read_tool_calls_about,
        read_tool_deadlines,
    )

__getattr__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "DB_FILE",
    "POLICY_FILE",
    "ToolRouterActor",
    "open_db",
    "read_inventories",
    "read_tool_calls",
    "read_tool_calls_about",
    "read_tool_deadlines",
]
