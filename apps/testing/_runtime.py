"""A real runtime for one app's test: `lineup run` on a data dir of its own, with its
embedded AppServer and no demo agent, the app installed and enabled, and the agent's side
played by `lineup agent`.

What the command line does not show (the runtime being online, the inventory a
conversation was given, an instance's session data) is read from the runtime's own
database, read-only, as the runtime's operator commands read it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import trio

from ._bundle import SignedBundle, signed_bundle
from ._cli import AppTestError, lineup, lineup_ok

T = TypeVar("T")
CONVERSATION = "app-test"
POLL_S = 0.05


@dataclass(frozen=True)
class Outcome:
    """A call's one final answer: `output` with a result, `code` and `message` with an
    error (`ok` says which)."""

    call_id: str
    ok: bool
    output: Any = None
    code: str | None = None
    message: str | None = None


async def wait_for(predicate: Callable[[], T | None], timeout: float, what: str) -> T:
    """Polls `predicate` until it returns something truthy; AppTestError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AppTestError(f"timed out after {timeout:g} s waiting for {what}")
        await trio.sleep(POLL_S)


class AppRuntime:
    """The runtime an app under test runs in (`running_app` makes one)."""

    def __init__(self, data_dir: Path, bundle: SignedBundle, process: trio.Process) -> None:
        self.data_dir = data_dir
        self.bundle = bundle
        self._process = process
        self._conversations: set[str] = set()

    def _query(self, sql: str, *params: Any, file: str = "runtime.db") -> list[tuple[Any, ...]]:
        """Rows of one of the runtime's files (`runtime.db`, or the tool router's
        `tool_router.db`), read-only."""
        if self._process.poll() is not None:
            raise AppTestError(f"the runtime exited:\n{self.log()}")
        path = self.data_dir / file
        if not path.exists():
            return []
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            try:
                return db.execute(sql, params).fetchall()
            except sqlite3.OperationalError:  # a table the runtime has not created yet
                return []

    def log(self) -> str:
        """The end of the runtime's log (`DATA_DIR/../runtime.log`)."""
        text = (self.data_dir.parent / "runtime.log").read_text(errors="replace")
        return text[-4000:]

    async def wait_online(self, timeout: float = 60) -> None:
        online = "SELECT 1 FROM lifecycle WHERE name = 'runtime' AND state = 'online'"
        await wait_for(lambda: self._query(online), timeout, "the runtime to be online")

    async def call(
        self,
        method: str,
        arguments: dict[str, Any] | None = None,
        *,
        conversation: str = CONVERSATION,
        timeout: float = 60,
    ) -> Outcome:
        """Calls tool `method` as the agent, in `conversation` (opened by the agent's first
        word when it is new), once the conversation's inventory lists it; its one final
        result or error."""
        if conversation not in self._conversations:
            await lineup_ok(
                "agent", "send", "--data-dir", self.data_dir, "--conversation", conversation,
                "--text", "hello",
            )  # fmt: skip
            self._conversations.add(conversation)
        app_scope, revision = await wait_for(
            lambda: self._listing(conversation, method), timeout, f"{method} in the inventory"
        )
        code, out, err = await lineup(
            "agent", "call", "--data-dir", self.data_dir, "--conversation", conversation,
            "--tool", method, "--args", json.dumps(arguments or {}), "--app", app_scope,
            "--revision", str(revision), "--timeout", str(timeout), "--json",
            timeout=timeout + 30,
        )  # fmt: skip
        try:
            summary = json.loads(out)
        except json.JSONDecodeError:
            raise AppTestError(f"`lineup agent call {method}` exited {code}: {err}") from None
        if summary.get("outcome") == "result":
            return Outcome(summary["call_id"], True, output=summary["output"])
        return Outcome(
            summary["call_id"],
            False,
            code=summary.get("code"),
            message=summary.get("message") or summary.get("detail"),
        )

    def _listing(self, conversation: str, method: str) -> tuple[str, int] | None:
        """(the app offering `method`, the inventory revision) once the conversation's
        latest inventory lists it."""
        rows = self._query(
            "SELECT revision, payload FROM tool_inventories WHERE conversation_id = ?",
            conversation,
            file="tool_router.db",
        )
        for revision, payload in rows:
            for entry in json.loads(payload).get("tools", []):
                if entry.get("method") == method:
                    return str(entry["app_scope"]), int(revision)
        return None

    async def instances(self, app_scope: str) -> list[str]:
        """The app's open instances, as `lineup app list` shows them."""
        listed = await lineup_ok("app", "list", "--data-dir", self.data_dir)
        return [
            str(row["instance_id"])
            for row in listed["instances"]
            if row["app_scope"] == app_scope and row["state"] != "closed"
        ]

    def session_data(self, app_scope: str) -> dict[str, Any]:
        """Each of the app's instances that kept session data: instance id -> its data."""
        rows = self._query(
            "SELECT instance_id, data FROM app_session_data WHERE app_scope = ?", app_scope
        )
        return {str(instance): json.loads(data) for instance, data in rows}


@contextlib.asynccontextmanager
async def running_app(
    app_dir: str | Path, *, work_dir: Path | None = None
) -> AsyncIterator[AppRuntime]:
    """The app in `app_dir` built, signed with a throwaway key, installed and enabled in a
    runtime of its own, for the block; then the runtime stops.

    `work_dir` (default: a fresh temporary directory, removed afterwards) holds the bundle,
    the key, the runtime's data dir (`data`) and its log (`runtime.log`); keep its path
    short, as the runtime's sockets live in it.
    """
    made = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="lineup-app-")) if work_dir is None else work_dir
    try:
        bundle = await signed_bundle(Path(app_dir), work / "bundle")
        data_dir = work / "data"
        (data_dir / "trusted_keys").mkdir(parents=True)
        shutil.copy(bundle.public_key, data_dir / "trusted_keys")
        command = [
            sys.executable, "-m", "lineup.cli", "run", "--headless", "--no-web",
            "--no-demo-agent", "--data-dir", str(data_dir),
        ]  # fmt: skip
        # Without the session bus, the test's runtime keeps its token in its data dir's file
        # and leaves no item in the author's keyring.
        env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
        with open(work / "runtime.log", "wb") as log:  # noqa: ASYNC230 (opened once)
            process = await trio.lowlevel.open_process(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env
            )
        runtime = AppRuntime(data_dir, bundle, process)
        try:
            await runtime.wait_online()
            for step in (("install", bundle.path), ("enable", bundle.app_scope)):
                await lineup_ok("app", *step, "--data-dir", data_dir)
            yield runtime
        finally:
            with trio.CancelScope(shield=True):
                await _stop(process)
    finally:
        if made:
            shutil.rmtree(work, ignore_errors=True)


async def _stop(process: trio.Process, timeout: float = 30) -> None:
    """SIGTERM, as Ctrl-C would: the runtime stops its actors; SIGKILL if it has not
    stopped within `timeout` s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    with trio.move_on_after(timeout):
        await process.wait()
        return
    process.kill()
    await process.wait()
