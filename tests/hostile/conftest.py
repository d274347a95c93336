"""The hostile app as any publisher ships it: a key pair, `lineup app build`, `lineup app
sign`; and a runtime on a real AppServer into which the user installs and launches it with
the `lineup app` CLI."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import trio

from peers.agent import AgentClient
from tests.app_manager.conftest import lineup
from tests.kernel.helpers import REPO_ROOT
from tests.runtime import helpers as runtime_helpers
from tests.runtime.conftest import stack  # noqa: F401 - the runtime tests' stack
from tests.runtime.helpers import CONVERSATION, Stack, runtime_config, wait_for
from tests.tools.helpers import Agent, new_revision, tools_of

SCOPE = "hostile"


@pytest.fixture(scope="session")
def hostile_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the signed bundle, the publisher's public key)."""
    root = tmp_path_factory.mktemp("hostile")
    code, _, err = lineup("app", "keygen", "--out", root / "keys", "--name", "mallory")
    assert code == 0, err
    bundle = root / "hostile.bundle"
    code, _, err = lineup("app", "build", REPO_ROOT / "tests" / "hostile" / "app", "--out", bundle)
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", root / "keys" / "mallory.key")
    assert code == 0, err
    return bundle, root / "keys" / "mallory.pub"


class Hostile:
    """The runtime, its AppServer and agent, and the user's CLI with the hostile app."""

    def __init__(self, runtime_stack: Stack, bundle: Path, key: Path) -> None:
        self.stack = runtime_stack
        self.bundle = bundle
        self.key = key
        self.data_dir = runtime_stack.data_dir
        self.app_dir = self.data_dir / "apps" / SCOPE

    async def start_conversation(self, env: dict[str, str] | None = None) -> AgentClient:
        """The AppServer, the runtime (its processes with `env`) and the agent, whose first
        message in the conversation has been given the first inventory revision: where an
        app's tools are offered."""
        await self.stack.start_appserver()
        await self.stack.start_runtime(env=env)
        client = await self.stack.start_agent()
        await client.send_text(CONVERSATION, "hello")
        await new_revision(self.stack, 0)
        return client

    async def app(self, *args: str | Path) -> dict[str, Any]:
        """`lineup app ARGS --json` on a worker thread (the AppServer runs meanwhile)."""
        code, out, err = await trio.to_thread.run_sync(
            lambda: lineup("app", *args, "--data-dir", self.data_dir, "--json")
        )
        assert code == 0 and out, f"lineup app {args}: {out} {err}"
        return dict(json.loads(out))

    async def install(self, orders: dict[str, Any]) -> None:
        trusted = self.data_dir / "trusted_keys"
        trusted.mkdir(parents=True, exist_ok=True)
        shutil.copy(self.key, trusted / self.key.name)
        # The orders wait in its private directory, handed to its uid at its first start.
        self.app_dir.mkdir(parents=True, exist_ok=True)
        (self.app_dir / "orders.json").write_text(json.dumps(orders))
        await self.app("install", self.bundle)
        await self.app("enable", SCOPE)

    async def launch(self) -> None:
        await self.app("launch", SCOPE, "--conversation", "conv-1")

    async def started(self, orders: dict[str, Any], tool: str) -> Agent:
        """The runtime on its AppServer, the agent in the conversation, and the hostile app
        installed with `orders`, its `tool` in the agent's inventory: the agent's side of
        its calls."""
        await self.stack.start_appserver()
        await self.stack.start_runtime()
        client = await self.stack.start_agent()
        await client.send_text(CONVERSATION, "hello")
        await new_revision(self.stack, 0)
        await self.install(orders)
        await wait_for(lambda: tool in tools_of(self.stack), 30, "its tool in the inventory")
        return Agent(self.stack, client, SCOPE)

    def order(self, name: str, options: dict[str, Any]) -> None:
        """An order the running app waits for, added whole (readable by its uid)."""
        path = self.app_dir / "orders.json"
        orders = json.loads(path.read_text())
        orders[name] = options
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(orders))
        partial.chmod(0o644)
        partial.replace(path)

    def report(self) -> dict[str, Any] | None:
        path = self.app_dir / "report.json"
        return json.loads(path.read_text()) if path.exists() else None

    async def wait_report(self, timeout: float) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            report = self.report()
            return report if report and report.get("done") else None

        return await wait_for(done, timeout, "the hostile app's report")

    def runtime_rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return _rows(self.data_dir / "runtime.db", query, params)

    def registry_rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return _rows(self.data_dir / "app_manager.db", query, params)

    def tool_router_rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return _rows(self.data_dir / "tool_router.db", query, params)

    def gateway_rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return _rows(self.data_dir / "capability_gateway.db", query, params)

    def mailbox_rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return _rows(self.data_dir / "mailbox.db", query, params)

    def appserver_rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return _rows(self.stack.appserver_dir / "appserver.db", query, params)

    def restarts(self) -> dict[str, int]:
        assert self.stack.runtime is not None
        return {name: a["restarts"] for name, a in self.stack.runtime.actors().items()}


def _rows(path: Path, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as db:
        return db.execute(query, params).fetchall()


# Every hostile test runs against an app forked from the app zygote (the runtime's default);
# these modules' tests against an exec'd app as well, the fallback's path.
EXEC_TOO = ("test_containment",)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "hostile" in metafunc.fixturenames:
        module = metafunc.module.__name__.rpartition(".")[2]
        launches = ["zygote", "exec"] if module in EXEC_TOO else ["zygote"]
        metafunc.parametrize("app_launch", launches)


@pytest.fixture
async def hostile(
    stack: Stack,  # noqa: F811 - the fixture imported above
    hostile_bundle: tuple[Path, Path],
    app_launch: str,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Hostile]:
    def launching(data_dir: Path, url: str, **transport: Any) -> dict[str, Any]:
        return {**runtime_config(data_dir, url, **transport), "app_launch": app_launch}

    # The stack's runtime is configured when a test starts it: with this way of launching.
    monkeypatch.setattr(runtime_helpers, "runtime_config", launching)
    yield Hostile(stack, *hostile_bundle)
