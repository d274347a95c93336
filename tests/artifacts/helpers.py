"""What the artifact tests do and read: a runtime with the toolbox (its store's artifact
quotas set per test, the chat able to read an artifact on the user's word), the store's
rows and files, the chat's reads, the CLI."""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from actors import runtime_children
from actors.runtime_token import write_token
from actors.store import read_artifacts
from lineup.ui_session import UiSession
from tests.app_manager.conftest import lineup
from tests.kernel.helpers import Runtime
from tests.runtime.helpers import CONVERSATION, Stack, runtime_config, wait_for
from tests.tools.helpers import Agent, install_toolbox, new_revision

from .chat_reader import READS

CHAT_READER = "tests.artifacts.chat_reader:ChatReader"


async def toolbox_with_artifacts(
    stack: Stack,
    box: tuple[Path, Path],
    *,
    limits: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> Agent:
    """The AppServer, the runtime (with these artifact quotas, in this environment), the
    agent in the conversation, and the toolbox installed with its tools in the inventory."""
    server = await stack.start_appserver()
    stack.data_dir.mkdir(parents=True, exist_ok=True)
    write_token(stack.data_dir / runtime_children.TOKEN_FILE, server.credentials.runtime_token)
    config = runtime_config(stack.data_dir, stack.url)
    for child in config["children"]:
        if child["name"] == "store" and limits is not None:
            child["config"]["artifact_limits"] = limits
        if child["name"] == "app.chat":
            child["target"] = CHAT_READER
    stack.runtime = Runtime(stack.data_dir, config, log_dir=stack.base)
    stack.runtime.start(wait=False, env=env)
    await stack.wait_lifecycle("online")
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    install_toolbox(stack, box)
    await new_revision(stack, first)
    return Agent(stack, client, "toolbox")


def stored(stack: Stack) -> dict[str, dict[str, Any]]:
    """The store's artifact rows, by id."""
    return {row["artifact_id"]: row for row in read_artifacts(stack.data_dir)}


def files(stack: Stack) -> dict[str, bytes]:
    """Every file of the artifact directory, by name (one removed while it is read is
    gone, as the next reading would find it)."""
    directory = stack.data_dir / "artifacts"
    if not directory.is_dir():
        return {}
    found = {}
    for path in directory.iterdir():
        with contextlib.suppress(FileNotFoundError):
            found[path.name] = path.read_bytes()
    return found


def assert_whole(stack: Stack) -> None:
    """Every row names a whole file (its size and SHA-256), and every file has its row."""
    rows, found = stored(stack), files(stack)
    assert set(found) == set(rows), f"files {sorted(found)} against rows {sorted(rows)}"
    for artifact_id, row in rows.items():
        assert len(found[artifact_id]) == row["size"]
        assert hashlib.sha256(found[artifact_id]).hexdigest() == row["sha256"]


def made(size: int) -> bytes:
    """The bytes the toolbox's `box.artifact` makes for `size`."""
    return bytes(n % 251 for n in range(size))


async def chat_reads(stack: Stack, artifact_id: str) -> dict[str, Any]:
    """What the chat app got when the user's side asked it to read `artifact_id`."""
    UiSession(stack.data_dir, session_id="test").act(
        {"kind": "read_artifact", "artifact_id": artifact_id}
    )
    path = stack.data_dir / "apps" / "chat" / READS

    def read() -> dict[str, Any] | None:
        if not path.exists():
            return None
        return dict(json.loads(path.read_text())).get(artifact_id)

    return await wait_for(read, 30, f"the chat's read of {artifact_id}")


def cli(stack: Stack, *args: str) -> tuple[int, str, str]:
    return lineup("artifacts", *args, "--data-dir", stack.data_dir)
