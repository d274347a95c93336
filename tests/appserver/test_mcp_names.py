"""The MCP bridge's tool names: every app scope and method the contracts allow, however an
app picks them, maps to a name hosts accept (`^[A-Za-z0-9_-]{1,64}$`), back to the same
pair, never to another pair's name, and never into the bridge's own `runtime_` names; and
each descriptor's hints follow the descriptor."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import InventoryTool, is_app_scope, is_tool_method
from peers.agent.mcp import BRIDGE_TOOLS, mcp_tool, natural_tool, tool_name

HOST_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
LETTERS = "abcdefghijklmnopqrstuvwxyz"
_segment = st.tuples(st.sampled_from(LETTERS), st.text(LETTERS + "0123456789_", max_size=23))
scopes = (
    st.lists(st.text(LETTERS + "0123456789", min_size=1, max_size=24), min_size=1, max_size=4)
    .map("-".join)
    .filter(lambda s: s[0].isalpha() and is_app_scope(s) and s != "runtime")
)
methods = (
    st.lists(_segment.map("".join), min_size=1, max_size=4).map(".".join).filter(is_tool_method)
)


@given(scopes, methods)
def test_a_name_is_a_hosts_and_spells_its_tool(scope: str, method: str) -> None:
    name = tool_name(scope, method)
    assert HOST_NAME.fullmatch(name), name
    assert name not in BRIDGE_TOOLS and not name.startswith("runtime_")
    if natural_tool(name) is None:  # cut: too long to spell
        assert len(f"{scope}_{method}") > 64 and len(name) == 63
    else:
        assert natural_tool(name) == (scope, method)


@settings(max_examples=30)
@given(st.lists(st.tuples(scopes, methods), min_size=2, max_size=20, unique=True))
def test_two_tools_never_share_a_name(tools: list[tuple[str, str]]) -> None:
    assert len({tool_name(scope, method) for scope, method in tools}) == len(tools)


def test_names_read_as_the_tool() -> None:
    assert tool_name("whiteboard", "board.create") == "whiteboard_board-create"
    assert tool_name("draw-and-guess", "game.start_round") == "draw-and-guess_game-start_round"
    assert natural_tool("draw-and-guess_game-start_round") == ("draw-and-guess", "game.start_round")
    assert natural_tool("whiteboard") is None and natural_tool("Whiteboard_x") is None
    assert set(BRIDGE_TOOLS) == {"runtime_send_message", "runtime_read_messages"}
    long_scope, long_method = "a" * 40, "b" * 30
    cut = tool_name(long_scope, long_method)
    assert cut.startswith("a" * 40 + "_bbbb--") and len(cut) == 63
    assert natural_tool(cut) is None and cut != tool_name(long_scope, "c" * 30)


def _tool(**fields: object) -> InventoryTool:
    schema = {"type": "object"}
    return InventoryTool.model_validate(
        {
            "app_scope": "notes",
            "method": "note.drop",
            "contract_version": "1",
            "input_schema": schema,
            "output_schema": schema,
            **fields,
        }
    )


def test_hints_follow_the_descriptor() -> None:
    query = mcp_tool(_tool(call_model="query", idempotent=True)).annotations
    assert query is not None and query.read_only_hint and query.destructive_hint is None
    assert query.idempotent_hint
    risky = mcp_tool(_tool(risk="high")).annotations
    assert risky is not None and risky.read_only_hint is False and risky.destructive_hint
    declared = mcp_tool(_tool(risk="high", annotations={"destructive_hint": False})).annotations
    assert declared is not None and declared.destructive_hint is False
    plain = mcp_tool(_tool(title="Drop a note"))
    assert plain.description == "Drop a note" and plain.annotations is not None
    assert plain.annotations.destructive_hint is False and not plain.annotations.idempotent_hint
