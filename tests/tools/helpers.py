"""What the tool tests read and do: the CLI, the tool router's own record (`tool_router.db`)
and what the agent was given (the AppServer's record)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from actors.tool_router import read_inventories, read_tool_calls
from peers.agent import AgentClient
from tests.app_manager.conftest import Bundles, lineup
from tests.runtime.helpers import CONVERSATION, Stack, wait_for


def app(stack: Stack, *args: str | Path) -> None:
    code, out, err = lineup("app", *args, "--data-dir", stack.data_dir)
    assert code == 0, out + err


def trust(stack: Stack, bundles: Bundles) -> None:
    (stack.data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(bundles.keys / "publisher.pub", stack.data_dir / "trusted_keys")


def sent(stack: Stack, type_: str, conversation: str = CONVERSATION) -> list[dict[str, Any]]:
    """The envelopes of one type the runtime gave the agent in a conversation."""
    return [
        env
        for env in stack.given()
        if env["type"] == type_ and env["scope"]["conversation_id"] == conversation
    ]


def revision_of(stack: Stack, conversation: str = CONVERSATION) -> int:
    rows = [r for r in read_inventories(stack.data_dir) if r["conversation_id"] == conversation]
    return int(rows[0]["revision"]) if rows else 0


async def new_revision(stack: Stack, above: int, conversation: str = CONVERSATION) -> int:
    return await wait_for(
        lambda: revision_of(stack, conversation) if revision_of(stack, conversation) > above else 0,
        30,
        f"an inventory revision above {above}",
    )


def tools_of(stack: Stack, conversation: str = CONVERSATION) -> list[str]:
    rows = [r for r in read_inventories(stack.data_dir) if r["conversation_id"] == conversation]
    return [t["method"] for t in rows[0]["payload"]["tools"]] if rows else []


def call_row(stack: Stack, call_id: str) -> dict[str, Any] | None:
    return next((c for c in read_tool_calls(stack.data_dir) if c["call_id"] == call_id), None)


async def final_of(stack: Stack, call_id: str, timeout: float = 30) -> dict[str, Any]:
    """The call's row once it has its final outcome and the agent was given it."""

    def done() -> dict[str, Any] | None:
        row = call_row(stack, call_id)
        if not row or row["state"] not in ("succeeded", "failed"):
            return None
        return row if finals(stack, call_id) else None

    return await wait_for(done, timeout, f"the outcome of {call_id}")


class Agent:
    """The agent's side of calls, as raw envelopes: what a test needs to get exact ids."""

    def __init__(self, stack: Stack, client: AgentClient, app_scope: str) -> None:
        self.stack = stack
        self.client = client
        self.app_scope = app_scope

    def invoke(
        self,
        call_id: str,
        method: str,
        arguments: dict[str, Any] | None = None,
        *,
        revision: int | None = None,
        conversation: str = CONVERSATION,
    ) -> dict[str, Any]:
        return self.client.envelope(
            "lineup.tool.invoke",
            conversation,
            {"method": method, "contract_version": "1", "arguments": arguments or {}},
            app_scope=self.app_scope,
            target_kind="runtime",
            call_id=call_id,
            inventory_revision=str(revision or revision_of(self.stack, conversation)),
        )

    async def call(self, call_id: str, method: str, **options: Any) -> dict[str, Any]:
        """Submit one call; its row once it has its final outcome."""
        await self.client.submit(self.invoke(call_id, method, **options))
        return await final_of(self.stack, call_id)

    def cancel(self, call_id: str, reason: str = "done") -> dict[str, Any]:
        """The agent's `lineup.tool.cancel` of one of its calls."""
        return self.client.envelope(
            "lineup.tool.cancel",
            CONVERSATION,
            {"reason": reason},
            app_scope=self.app_scope,
            target_kind="runtime",
            call_id=call_id,
        )


def install_toolbox(stack: Stack, toolbox: tuple[Path, Path]) -> None:
    bundle, key = toolbox
    (stack.data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(key, stack.data_dir / "trusted_keys")
    app(stack, "install", bundle)
    app(stack, "enable", "toolbox")


def finals(stack: Stack, call_id: str) -> list[dict[str, Any]]:
    """Every final envelope the runtime gave the agent for a call (there must be one)."""
    return [
        env
        for env in stack.given()
        if env["type"] in ("lineup.tool.result", "lineup.tool.error")
        and env["correlation"]["call_id"] == call_id
    ]


def effects(stack: Stack) -> list[str]:
    """The toolbox's own record of the `box.count` calls it ran."""
    path = stack.data_dir / "apps" / "toolbox" / "effects.log"
    return path.read_text().split() if path.exists() else []


def stream_finals(stack: Stack) -> dict[str, list[str]]:
    """From the AppServer's own store (what the agent is given): each call id's final
    envelopes, by type, in stream order."""
    path = stack.appserver_dir / "appserver.db"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT type, body FROM messages WHERE type IN"
            " ('lineup.tool.result', 'lineup.tool.error') ORDER BY seq"
        ).fetchall()
    finally:
        db.close()
    out: dict[str, list[str]] = {}
    for type_, body in rows:
        envelope = json.loads(body)
        out.setdefault(envelope["correlation"]["call_id"], []).append(type_)
    return out


async def conversation_open(stack: Stack) -> tuple[AgentClient, int]:
    """The AppServer, the runtime and the agent up; the agent has spoken in the conversation,
    which has its first inventory: (the agent, that revision)."""
    await stack.start_appserver()
    await stack.start_runtime()
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    return client, await new_revision(stack, 0)


async def toolbox_ready(stack: Stack, toolbox: tuple[Path, Path]) -> Agent:
    """`conversation_open`, then the toolbox installed, enabled and in the inventory."""
    client, first = await conversation_open(stack)
    install_toolbox(stack, toolbox)
    await new_revision(stack, first)
    return Agent(stack, client, "toolbox")
