"""An app's tool as an MCP tool name, and back.

MCP hosts hand tool names to language models whose APIs take `^[A-Za-z0-9_-]{1,64}$`, so
the name keeps to that. A tool is located by its app scope and method
(`whiteboard` / `board.create`); its name is the scope, `_`, then the method with each `.`
written `-`: `whiteboard_board-create`. The grammars make this reversible and
collision-free: a scope has no `_` (so the first `_` ends it) and a method has no `-` (so
each `-` after it was a `.`).

A scope and a method may together pass 64 characters (each may be 64). Such a name is cut
to its first 45 characters, then `--` and 16 hex digits of the pair's BLAKE2b hash: no
natural name holds `--` (neither grammar allows two separators in a row), so a cut name
never equals a natural one, and two cut names differ unless their 64-bit hashes collide. A
cut name is reversed through the inventory it was listed from.

`runtime` is never an app's scope (the contracts reserve it for the runtime itself), so
`runtime_...` names the bridge's own tools, which no app's tool can take.
"""

from __future__ import annotations

import hashlib
from typing import Final

from contracts import is_app_scope, is_tool_method

MAX_NAME: Final = 64
_KEPT: Final = 45
CUT_MARK: Final = "--"
BRIDGE_SCOPE: Final = "runtime"


def tool_name(app_scope: str, method: str) -> str:
    """The MCP name of `app_scope`'s tool `method`."""
    natural = f"{app_scope}_{method.replace('.', '-')}"
    if len(natural) <= MAX_NAME:
        return natural
    digest = hashlib.blake2b(f"{app_scope}/{method}".encode(), digest_size=8).hexdigest()
    return f"{natural[:_KEPT]}{CUT_MARK}{digest}"


def natural_tool(name: str) -> tuple[str, str] | None:
    """The app scope and method a natural name spells, or None (a cut name, or no tool's
    name at all). It says nothing about whether the app offers that method."""
    if CUT_MARK in name:
        return None
    scope, separator, encoded = name.partition("_")
    method = encoded.replace("-", ".")
    if not separator or not is_app_scope(scope) or not is_tool_method(method):
        return None
    return scope, method
