"""The whole path with real pieces: a reference AppServer and an agent in the test process
(real WebSockets on loopback), the runtime as a real supervisor process tree.

Waiting is always on a condition with a deadline (`wait_for`): the test's trio loop keeps
running the AppServer and the agent meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import trio

from actors import runtime_children
from actors.kernel import ControlError, control_request
from actors.runtime_token import write_token
from actors.store import read_audit, read_lifecycle, read_outbox
from apps.chat import history
from lineup.ui_session import UiSession
from peers.agent import AgentClient
from peers.appserver import AppServer
from tests.kernel.helpers import Runtime

T = TypeVar("T")
CONVERSATION = "conv-1"


def given_to_agent(appserver_dir: Path) -> list[dict[str, Any]]:
    """Every envelope the runtime gave the agent, in stream order, as the AppServer keeps it
    (the store's outbox holds what the router queued; the tool router's envelopes go
    straight to the transport)."""
    path = appserver_dir / "appserver.db"
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT body FROM messages WHERE sender_kind != 'agent' ORDER BY seq"
        ).fetchall()
    return [json.loads(body) for (body,) in rows]


async def wait_for(predicate: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll `predicate` (cheap, non-blocking) until truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await trio.sleep(0.02)


def runtime_config(data_dir: Path, url: str, **transport: Any) -> dict[str, Any]:
    config = runtime_children.default_config(data_dir, appserver_url=url).model_dump(mode="json")
    # Kill tests restart actors many times within a few seconds: that is the point.
    config.update(max_restarts=1000, max_seconds=1.0, backoff_max=0.2)
    for child in config["children"]:
        if child["name"] == "transport":
            child["config"].update({"backoff_initial": 0.02, "backoff_max": 0.3, **transport})
    return config


class Stack:
    """One AppServer, one runtime on it, one agent (`demo`)."""

    def __init__(self, base: Path, nursery: trio.Nursery) -> None:
        self.base = base
        self.nursery = nursery
        self.appserver_dir = base / "appserver"
        self.data_dir = base / "runtime"
        self.server: AppServer | None = None
        self.server_scope: trio.CancelScope | None = None
        self.port = 0
        self.runtime: Runtime | None = None
        self.agent: AgentClient | None = None

    # -- the AppServer -------------------------------------------------------------------

    async def start_appserver(self, **options: Any) -> AppServer:
        server = AppServer(self.appserver_dir, port=self.port, **options)

        async def serve(task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
            with trio.CancelScope() as scope:
                self.server_scope = scope
                await server.serve(task_status=task_status)

        self.port = await self.nursery.start(serve)
        self.server = server
        return server

    async def stop_appserver(self) -> None:
        assert self.server_scope is not None
        self.server_scope.cancel()
        await wait_for(lambda: self.server is not None and self.server.port is None, 10, "stop")

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/ws"

    # -- the runtime ---------------------------------------------------------------------

    async def start_runtime(
        self, *, env: dict[str, str] | None = None, **transport: Any
    ) -> Runtime:
        assert self.server is not None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        write_token(
            self.data_dir / runtime_children.TOKEN_FILE, self.server.credentials.runtime_token
        )
        if self.runtime is None:
            self.runtime = Runtime(
                self.data_dir,
                runtime_config(self.data_dir, self.url, **transport),
                log_dir=self.base,
            )
        self.runtime.start(wait=False, env=env)
        await self.wait_lifecycle("online")
        # Online is the transport's word; every other actor has started once the supervisor
        # says running (or degraded), which a test may compare with later.
        runtime = self.runtime

        def every_actor_up() -> bool:
            try:
                return runtime.status()["state"] in ("running", "degraded")
            except (ControlError, OSError):  # its control socket not open yet
                return False

        await wait_for(every_actor_up, 60, "every actor up")
        return runtime

    def lifecycle(self) -> str | None:
        record = read_lifecycle(self.data_dir)
        return record["state"] if record else None

    async def wait_lifecycle(self, state: str, timeout: float = 30) -> None:
        def reached() -> bool:
            assert self.runtime is not None
            if not self.runtime.alive:
                raise AssertionError(f"the runtime exited:\n{self.runtime.log()[-3000:]}")
            return self.lifecycle() == state

        await wait_for(reached, timeout, f"the runtime to be {state}")

    def control(self, request: dict[str, Any]) -> dict[str, Any]:
        return control_request(self.data_dir, request, timeout=10)

    def kill(self, name: str) -> bool:
        """SIGKILL an actor through the control socket; False if it had no process then."""
        try:
            self.control({"type": "kill", "name": name})
        except ControlError:
            return False
        return True

    def user_says(self, text: str, conversation: str = CONVERSATION) -> str:
        """The user types `text` in the chat (a UI action through the host actor)."""
        body = {"kind": "send", "conversation_id": conversation, "text": text}
        return UiSession(self.data_dir, session_id="test").act(body)

    def timeline(self, conversation: str = CONVERSATION) -> list[dict[str, Any]]:
        return list(history(self.data_dir, conversation)["timeline"])

    def audit(self) -> list[dict[str, Any]]:
        return read_audit(self.data_dir)

    async def audited(
        self, keep: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> list[dict[str, Any]]:
        """The audit rows `keep` picks, once there is one: an actor that keeps its own file
        (the tool router, the gateway) decides there first and hands the row to the store
        after, so a row may trail the outcome a test saw."""
        return await wait_for(
            lambda: [row for row in self.audit() if keep(row)], timeout, "the audit rows"
        )

    async def audit_of(self, message_id: str, timeout: float = 30) -> dict[str, Any]:
        """The audit row about `message_id`, once the store has it."""
        rows = await self.audited(lambda row: row["message_id"] == message_id, timeout)
        return rows[-1]

    def outbox(self) -> list[dict[str, Any]]:
        return read_outbox(self.data_dir)

    def given(self) -> list[dict[str, Any]]:
        return given_to_agent(self.appserver_dir)

    # -- the agent -------------------------------------------------------------------------

    async def start_agent(self, agent_id: str = "demo") -> AgentClient:
        assert self.server is not None
        agent = AgentClient(
            self.url,
            agent_id=agent_id,
            token=self.server.credentials.token_for_agent(agent_id),
            backoff_initial=0.02,
            backoff_max=0.3,
        )
        await self.nursery.start(agent.run)
        if agent_id == "demo":
            self.agent = agent
        return agent

    def cleanup(self) -> list[int]:
        return self.runtime.cleanup() if self.runtime is not None else []


def texts(timeline: list[dict[str, Any]], sender: str | None = None) -> list[str]:
    return [item["text"] for item in timeline if sender is None or item["sender"] == sender]


def dump(value: Any) -> str:
    with contextlib.suppress(TypeError):
        return json.dumps(value, indent=1)[:3000]
    return repr(value)[:3000]
