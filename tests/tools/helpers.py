"""What the tool tests read and do: the CLI, and the runtime's own record (runtime.db)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from actors.store import read_inventories, read_outbox_envelopes, read_tool_calls
from tests.app_manager.conftest import Bundles, lineup
from tests.runtime.helpers import CONVERSATION, Stack, wait_for


def app(stack: Stack, *args: str | Path) -> None:
    code, out, err = lineup("app", *args, "--data-dir", stack.data_dir)
    assert code == 0, out + err


def trust(stack: Stack, bundles: Bundles) -> None:
    (stack.data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(bundles.keys / "publisher.pub", stack.data_dir / "trusted_keys")


def sent(stack: Stack, type_: str, conversation: str = CONVERSATION) -> list[dict[str, Any]]:
    """The envelopes of one type the runtime put in its outbox for a conversation."""
    return [
        env
        for env in read_outbox_envelopes(stack.data_dir)
        if env["type"] == type_ and env["scope"]["conversation_id"] == conversation
    ]


def revision(stack: Stack, conversation: str = CONVERSATION) -> int:
    rows = [r for r in read_inventories(stack.data_dir) if r["conversation_id"] == conversation]
    return int(rows[0]["revision"]) if rows else 0


async def new_revision(stack: Stack, above: int, conversation: str = CONVERSATION) -> int:
    return await wait_for(
        lambda: revision(stack, conversation) if revision(stack, conversation) > above else 0,
        30,
        f"an inventory revision above {above}",
    )


def tools_of(stack: Stack, conversation: str = CONVERSATION) -> list[str]:
    rows = [r for r in read_inventories(stack.data_dir) if r["conversation_id"] == conversation]
    return [t["method"] for t in rows[0]["payload"]["tools"]] if rows else []


def call_row(stack: Stack, call_id: str) -> dict[str, Any] | None:
    return next((c for c in read_tool_calls(stack.data_dir) if c["call_id"] == call_id), None)


async def final_of(stack: Stack, call_id: str, timeout: float = 30) -> dict[str, Any]:
    """The call's row once it has its final outcome."""

    def done() -> dict[str, Any] | None:
        row = call_row(stack, call_id)
        return row if row and row["state"] in ("succeeded", "failed") else None

    return await wait_for(done, timeout, f"the outcome of {call_id}")
