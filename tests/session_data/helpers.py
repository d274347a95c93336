"""What the session-data tests do and read: the notebook's tool calls, its subscribers'
record, and the runtime's own (runtime.db, read-only)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from actors.kernel import new_id
from actors.store import read_session_data
from tests.runtime.helpers import CONVERSATION, Stack
from tests.tools.helpers import Agent, app, conversation_open, new_revision

SCOPE = "notebook"


class Notebook:
    """The notebook's tools, called by the agent; each answer is the call's output."""

    def __init__(self, stack: Stack, agent: Agent) -> None:
        self.stack = stack
        self.agent = agent

    async def ask(
        self, method: str, arguments: dict[str, Any], conversation: str = CONVERSATION
    ) -> dict[str, Any]:
        row = await self.agent.call(
            f"call_{new_id().lower()}", method, arguments=arguments, conversation=conversation
        )
        assert row["state"] == "succeeded", row
        return dict(row["output"])

    async def get(self, conversation: str = CONVERSATION, **named: str) -> dict[str, Any]:
        return await self.ask("note.get", named, conversation)

    async def replace(
        self, data: dict[str, Any], expected: int, conversation: str = CONVERSATION, **named: str
    ) -> dict[str, Any]:
        arguments = {"data": data, "expected_revision": expected, **named}
        return await self.ask("note.replace", arguments, conversation)

    def frames(self, listener: str) -> list[dict[str, Any]]:
        """What the listener named got, in the order it got it."""
        path = self.stack.data_dir / "apps" / SCOPE / "frames.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        return [f for f in map(json.loads, lines) if f.pop("listener") == listener]


def install(stack: Stack, bundle: tuple[Path, Path]) -> None:
    path, key = bundle
    (stack.data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(key, stack.data_dir / "trusted_keys")
    app(stack, "install", path)
    app(stack, "enable", SCOPE)


async def notebook_ready(stack: Stack, bundle: tuple[Path, Path]) -> Notebook:
    """The runtime online, the agent in the conversation, the notebook installed and in
    its inventory."""
    client, first = await conversation_open(stack)
    install(stack, bundle)
    await new_revision(stack, first)
    return Notebook(stack, Agent(stack, client, SCOPE))


def stored(stack: Stack, instance_id: str) -> dict[str, Any] | None:
    """The instance's row as the store keeps it (data decoded), or None."""
    path = stack.data_dir / "runtime.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        row = db.execute(
            "SELECT data, revision FROM app_session_data WHERE instance_id = ?", (instance_id,)
        ).fetchone()
    return {"data": json.loads(row[0]), "revision": row[1]} if row else None


def summary(stack: Stack) -> dict[str, dict[str, Any]]:
    """The store's reader for the operator: each instance's revision and size."""
    return {row["instance_id"]: row for row in read_session_data(stack.data_dir)}
