"""`lineup agent mcp` end to end: the official MCP client drives the sample apps (built,
signed and installed through the CLI) on a real runtime and AppServer, through the bridge
started exactly as `lineup agent mcp --print-config` says an MCP host should start it.

One runtime for the whole story, told in order: over stdio in the handshake era (what
today's hosts speak) the host lists the tools, draws a board, reads it back (its structured
result held to the tool's output schema), exports it with progress, is told its arguments'
first violation by its JSON pointer, and starts a timer; the bridge is SIGKILLed while the
timer runs. A host on the restarted bridge (2026-07-28 era) asks again with the same
idempotency key and gets that very call's final, the app having run it once; it cancels
another timer with `notifications/cancelled`. A call that names the revision before the
pomodoro was disabled is asked once more only for a tool the new revision left unchanged. The
host is told its tools changed when the whiteboard is disabled, then gets `app_disabled`
for it, and reads what the user wrote. Last, the bridge over Streamable HTTP refuses a
request without its key and serves one with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import trio
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged

from actors.tool_router import read_tool_calls
from apps.chat import history
from contracts import Inventory
from lineup.ui_session import UiSession
from peers.agent.mcp import IDEMPOTENCY_KEY, KEY_FILE, LEDGER_FILE, META_CODE
from peers.agent.mcp._calls import Calls, Follower
from peers.agent.mcp._ledger import Ledger
from tests.app_manager.conftest import lineup
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.helpers import CONVERSATION, Stack, texts, wait_for

from .helpers import PUBLISHER, SignedApp, cli, install_enabled

LIMIT_S = 60  # a hang guard for one step, never a speed check
HELLO = {"text": "Hello from an MCP host"}


def bridge_options(stack: Stack, state_dir: Path) -> list[str]:
    return [
        "agent",
        "mcp",
        "--appserver",
        stack.url,
        "--appserver-dir",
        str(stack.appserver_dir),
        "--conversation",
        CONVERSATION,
        "--state-dir",
        str(state_dir),
    ]


async def host_entry(stack: Stack, state_dir: Path) -> StdioServerParameters:
    """The `mcpServers` entry `--print-config` prints, as a host takes it."""
    printed = await trio.to_thread.run_sync(
        lambda: (
            subprocess.run(
                [
                    str(Path(sys.executable).parent / "lineup"),
                    *bridge_options(stack, state_dir),
                    "--print-config",
                ],
                capture_output=True,
                check=True,
                text=True,
            ).stdout
        )
    )
    entry = json.loads(printed)["mcpServers"]["lineup"]
    return StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])


class Host:
    """An MCP client on the bridge, with what the bridge told it."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.changes = 0  # notifications/tools/list_changed received
        self.changed = trio.Event()

    async def note(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.changes += 1
            self.changed.set()
            self.changed = trio.Event()

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        key: str | None = None,
        lines: list[str] | None = None,
    ) -> types.CallToolResult:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            if lines is not None:
                lines.append(message or "")

        with trio.fail_after(LIMIT_S):
            return await self.client.call_tool(
                name,
                arguments,
                progress_callback=progress if lines is not None else None,
                meta={IDEMPOTENCY_KEY: key} if key is not None else None,
            )

    async def tools(self) -> dict[str, types.Tool]:
        with trio.fail_after(LIMIT_S):
            return {tool.name: tool for tool in (await self.client.list_tools()).tools}


@contextlib.asynccontextmanager
async def open_host(entry: StdioServerParameters, mode: str) -> AsyncIterator[Host]:
    holder: list[Host] = []

    async def note(message: Any) -> None:
        await holder[0].note(message)

    client = Client(entry, mode=mode, message_handler=note)
    holder.append(Host(client))
    async with client:
        yield holder[0]


def bridge_pid() -> int:
    """The bridge the MCP client started: this process's child serving MCP on stdio."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        stdio = b"mcp" in command and b"--http" not in command
        if parent == os.getpid() and stdio:
            return int(entry.name)
    raise AssertionError("no bridge process")


def code_of(result: types.CallToolResult) -> str | None:
    return None if not result.is_error else str((result.meta or {}).get(META_CODE))


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def call_id_of(state_dir: Path, key: str) -> str:
    """The call the bridge's ledger made of an idempotency key."""
    db = sqlite3.connect(f"file:{state_dir / LEDGER_FILE}?mode=ro", uri=True)
    try:
        (call_id,) = db.execute("SELECT call_id FROM requests WHERE key = ?", (key,)).fetchone()
    finally:
        db.close()
    return str(call_id)


def app_ran(stack: Stack, scope: str, method: str) -> list[str]:
    """The calls of `method` the app's own process recorded (its `app.db`)."""
    path = stack.data_dir / "apps" / scope / "app.db"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT call_id FROM tool_calls WHERE method = ?", (method,))
        return [row[0] for row in rows]
    finally:
        db.close()


def runtime_row(stack: Stack, call_id: str) -> dict[str, Any] | None:
    return next((row for row in read_tool_calls(stack.data_dir) if row["call_id"] == call_id), None)


async def sample_apps(root: Path) -> tuple[SignedApp, SignedApp]:
    """The whiteboard and the pomodoro built and signed with `lineup app`, side by side."""
    keys = root / "keys"
    await trio.to_thread.run_sync(lineup, "app", "keygen", "--out", keys, "--name", PUBLISHER)
    built: dict[str, SignedApp] = {}

    async def build(package: str) -> None:
        bundle = root / f"{package}.bundle"
        for args in (
            ("build", REPO_ROOT / "apps" / package, "--out", bundle),
            ("sign", bundle, "--key", keys / f"{PUBLISHER}.key"),
        ):
            code, _, err = await trio.to_thread.run_sync(lambda a=args: lineup("app", *a))
            assert code == 0, err
        built[package] = SignedApp(package, bundle, keys / f"{PUBLISHER}.pub")

    async with trio.open_nursery() as nursery:
        for package in ("whiteboard", "pomodoro"):
            nursery.start_soon(build, package)
    return built["whiteboard"], built["pomodoro"]


async def listing(host: Host, names: set[str]) -> dict[str, types.Tool]:
    """The tools once they include `names`, listed again after each list_changed."""
    with trio.fail_after(LIMIT_S):
        while True:
            changed = host.changed
            tools = await host.tools()
            if names <= tools.keys():
                return tools
            await changed.wait()


def fits(result: types.CallToolResult, tool: types.Tool) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert tool.output_schema is not None
    output = result.structured_content
    assert isinstance(output, dict)
    Draft202012Validator(tool.output_schema).validate(output)
    assert json.loads(text_of(result)) == output
    return output


async def test_an_mcp_host_drives_the_sample_apps_through_the_bridge(
    stack: Stack, tmp_path: Path
) -> None:
    built: list[tuple[SignedApp, SignedApp]] = []

    async def build() -> None:
        built.append(await sample_apps(tmp_path))

    state_dir = tmp_path / "bridge"
    async with trio.open_nursery() as background:
        background.start_soon(build)  # while the runtime starts
        await stack.start_appserver()
        async with http_bridge(stack, tmp_path / "http-bridge") as http:
            await stack.start_runtime()
            entry = await host_entry(stack, state_dir)
            async with open_host(entry, "legacy") as host:
                said = await host.call("runtime_send_message", HELLO, key="hello")
                assert said.structured_content == {"sent": True, "duplicate": False}
                apps = (await wait_for(lambda: built, 300, "the apps built"))[0]
                await tools_and_calls(stack, host, apps)
                await killed_under_a_timer(host)
            first_call = call_id_of(state_dir, "t1")
            row = runtime_row(stack, first_call)
            assert row is not None and row["state"] == "deadline", row
            async with open_host(entry, "auto") as host:
                assert host.client.protocol_version == "2026-07-28"
                again = await host.call("runtime_send_message", HELLO, key="hello")
                assert again.structured_content == said.structured_content
                assert texts(stack.timeline(), "agent:demo") == [HELLO["text"]]
                await the_retry_gets_that_calls_final(stack, host, first_call)
                await a_withdrawn_call_is_cancelled(stack, host, state_dir, first_call)
                await a_stale_revision_is_retried_only_for_an_unchanged_tool(stack, tmp_path)
                await a_disabled_app_is_announced_and_refused(stack, host)
                stack.user_says("Thanks, that is all")
                read = await host.call("runtime_read_messages", {"wait_seconds": LIMIT_S})
                read_texts = [m["text"] for m in read.structured_content["messages"]]
                assert read_texts == ["Thanks, that is all"]
                await a_message_says_the_mode_it_was_sent_in(stack, host, read)
            await refuses_without_its_key(http)


async def a_message_says_the_mode_it_was_sent_in(
    stack: Stack, host: Host, read: types.CallToolResult
) -> None:
    """What the user typed says `im`; once they turned voice mode on, `audio`."""
    assert [m["mode"] for m in read.structured_content["messages"]] == ["im"]
    UiSession(stack.data_dir, session_id="test").act(
        {"kind": "mode", "conversation_id": CONVERSATION, "mode": "audio"}
    )
    await wait_for(lambda: history(stack.data_dir, CONVERSATION)["mode"] == "audio", 30, "audio")
    stack.user_says("Read me the plan")
    since = read.structured_content["cursor"]
    later = await host.call("runtime_read_messages", {"since": since, "wait_seconds": LIMIT_S})
    messages = later.structured_content["messages"]
    assert [(m["text"], m["mode"]) for m in messages] == [("Read me the plan", "audio")]


async def tools_and_calls(stack: Stack, host: Host, apps: tuple[SignedApp, SignedApp]) -> None:
    """The apps are installed: their tools are listed once the host is told they changed,
    and called."""
    for app in apps:
        await install_enabled(stack, app)
    tools = await listing(host, {"whiteboard_board-create", "pomodoro_pomodoro-start"})
    assert host.changes >= 1
    create, summary = tools["whiteboard_board-create"], tools["whiteboard_board-summary"]
    assert create.title == "Open the whiteboard" and create.input_schema["type"] == "object"
    assert create.annotations == types.ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False
    )
    assert summary.annotations == types.ToolAnnotations(read_only_hint=True, idempotent_hint=True)

    created = fits(await host.call(create.name, {"title": "Plan"}), create)
    assert created["title"] == "Plan"
    assert fits(await host.call(summary.name, {}), summary)["title"] == "Plan"
    lines: list[str] = []
    exported = await host.call("whiteboard_board-export", {"formats": ["png"]}, lines=lines)
    assert not exported.is_error, text_of(exported)
    assert "rendering png, 0%" in lines and "storing, 80%" in lines, lines

    wrong = await host.call("pomodoro_pomodoro-start", {"minutes": 0})
    assert code_of(wrong) == "invalid_arguments" and "'/minutes'" in text_of(wrong)


async def killed_under_a_timer(host: Host) -> None:
    """A timer starts; the bridge is SIGKILLed while it runs, and the request fails."""
    timer: list[str] = []
    lost: list[BaseException] = []

    async def start_timer() -> None:
        try:
            await host.call("pomodoro_pomodoro-start", {"minutes": 1}, key="t1", lines=timer)
        except Exception as exc:  # the bridge died under the request
            lost.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(start_timer)
        await wait_for(lambda: any(line.startswith("started") for line in timer), LIMIT_S, "start")
        os.kill(bridge_pid(), signal.SIGKILL)
        await wait_for(lambda: lost, LIMIT_S, "the request to fail with its bridge")


async def the_retry_gets_that_calls_final(stack: Stack, host: Host, first_call: str) -> None:
    """Asked again with its key, the timer's request follows the same call to its final:
    the app ran it once."""
    retried: list[types.CallToolResult] = []
    again: list[str] = []

    async def retry() -> None:
        retried.append(
            await host.call("pomodoro_pomodoro-start", {"minutes": 1}, key="t1", lines=again)
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(retry)
        await wait_for(lambda: "accepted by the runtime" in again, LIMIT_S, "the call followed")
        stopped = await host.call("pomodoro_pomodoro-stop", {})
        assert stopped.structured_content == {"stopped": True}
    assert code_of(retried[0]) == "cancelled_by_user"
    assert runtime_row(stack, first_call)["code"] == "cancelled_by_user"  # type: ignore[index]
    assert app_ran(stack, "pomodoro", "pomodoro.start") == [first_call]
    reused = await host.call("pomodoro_pomodoro-start", {"minutes": 2}, key="t1")
    assert code_of(reused) == "duplicate", text_of(reused)


async def a_withdrawn_call_is_cancelled(
    stack: Stack, host: Host, state_dir: Path, first_call: str
) -> None:
    """The host withdraws a timer's request (`notifications/cancelled`): its call is
    cancelled in the runtime, and asked again it says so."""
    second: list[str] = []
    withdrawn = trio.CancelScope()

    async def start_withdrawn() -> None:
        with withdrawn:
            await host.call("pomodoro_pomodoro-start", {"minutes": 1}, key="t2", lines=second)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(start_withdrawn)
        await wait_for(lambda: any(s.startswith("started") for s in second), LIMIT_S, "start")
        withdrawn.cancel()
    second_call = call_id_of(state_dir, "t2")
    await wait_for(
        lambda: (runtime_row(stack, second_call) or {}).get("code") == "cancelled_by_user",
        LIMIT_S,
        "the withdrawn call cancelled",
    )
    asked_again = await host.call("pomodoro_pomodoro-start", {"minutes": 1}, key="t2")
    assert code_of(asked_again) == "cancelled_by_user"
    assert app_ran(stack, "pomodoro", "pomodoro.start") == [first_call, second_call]


async def followed(calls: Calls, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The final of a call the bridge's `calls` follow (the tool's name as its key)."""
    follower = calls.begin(name, arguments, key=name)
    assert isinstance(follower, Follower), follower
    await wait_for(lambda: follower.over, LIMIT_S, f"{name}'s final")
    assert follower.final is not None, follower.failure
    return follower.final


class HeldBack(Calls):
    """The bridge's calls, whose inventory reaches them only after their first attempt:
    as when the runtime publishes a new revision while a call is on its way."""

    def __init__(self, held: Inventory, *args: Any) -> None:
        super().__init__(*args)
        self.held = held
        self.attempts: list[str] = []  # the revision each attempt named

    def inventory(self) -> Inventory | None:
        return self.held if not self.attempts else super().inventory()

    async def _one_attempt(self, follower: Follower, revision: str) -> dict[str, Any]:
        self.attempts.append(revision)
        return await super()._one_attempt(follower, revision)


async def a_stale_revision_is_retried_only_for_an_unchanged_tool(
    stack: Stack, tmp_path: Path
) -> None:
    """A call that names the revision before the pomodoro was disabled is refused stale by
    the runtime: the whiteboard's summary, the same in the new revision, is asked once more
    and runs once; the pomodoro's start, gone from it, ends stale with nothing run."""
    client = await stack.start_agent()

    def both_apps() -> Inventory | None:
        inventory = client.inventory(CONVERSATION)
        scopes = set() if inventory is None else {tool.app_scope for tool in inventory.tools}
        return inventory if {"whiteboard", "pomodoro"} <= scopes else None

    held = await wait_for(both_apps, LIMIT_S, "the conversation's inventory")
    await cli(stack, "app", "disable", "pomodoro")

    def newer() -> Inventory | None:
        inventory = client.inventory(CONVERSATION)
        return inventory if int(inventory.revision) > int(held.revision) else None  # type: ignore[union-attr]

    await wait_for(newer, LIMIT_S, "a new revision")
    ledger = Ledger(tmp_path)
    try:
        async with trio.open_nursery() as nursery:
            summary = HeldBack(held, client, ledger, CONVERSATION, nursery)
            final = await followed(summary, "whiteboard_board-summary", {})
            assert final["type"] == "lineup.tool.result", final
            first, again = summary.attempts  # the held revision, then a newer one
            assert first == held.revision and int(again) > int(first), summary.attempts
            retried = ledger.get("whiteboard_board-summary")
            assert retried is not None and retried.attempt == 2 and retried.call_id
            assert app_ran(stack, "whiteboard", "board.summary").count(retried.call_id) == 1

            start = HeldBack(held, client, ledger, CONVERSATION, nursery)
            final = await followed(start, "pomodoro_pomodoro-start", {"minutes": 1})
            assert final["payload"]["code"] == "stale_inventory_revision", final
            assert "list the tools again" in final["payload"]["message"]
            assert start.attempts == [held.revision]
    finally:
        ledger.close()
    assert len(app_ran(stack, "pomodoro", "pomodoro.start")) == 2  # the two of the story


async def a_disabled_app_is_announced_and_refused(stack: Stack, host: Host) -> None:
    async with host.client.listen(tools_list_changed=True) as changes:
        await cli(stack, "app", "disable", "whiteboard")
        with trio.fail_after(LIMIT_S):
            assert isinstance(await changes.__anext__(), ToolsListChanged)
    assert not [name for name in await host.tools() if name.startswith("whiteboard_")]
    refused = await host.call("whiteboard_board-summary", {})
    assert code_of(refused) == "app_disabled", text_of(refused)


@dataclass(frozen=True)
class HttpBridge:
    state_dir: Path
    said: Path  # its standard error


@contextlib.asynccontextmanager
async def http_bridge(stack: Stack, state_dir: Path) -> AsyncIterator[HttpBridge]:
    """`lineup agent mcp --http 0`, started now, stopped at the end of the block."""
    bridge = HttpBridge(state_dir, state_dir.parent / "http-bridge.err")
    with bridge.said.open("wb") as said:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "lineup.cli", *bridge_options(stack, state_dir), "--http", "0"],
            stderr=said,
        )
    try:
        yield bridge
    finally:
        process.terminate()
        await process.wait()


async def refuses_without_its_key(bridge: HttpBridge) -> None:
    """The bridge over Streamable HTTP: 401 without the key, served with it."""

    def up() -> str | None:
        text = bridge.said.read_text()
        return text if "/mcp;" in text else None

    said = await wait_for(up, LIMIT_S, "the HTTP bridge up")
    url = said.partition(" at ")[2].partition(";")[0]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), said
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient() as http:
        refused = await http.post(url, json=hello)
    assert refused.status_code == 401
    assert refused.json()["error"] == "unauthorized"
    key_file = bridge.state_dir / KEY_FILE
    assert key_file.stat().st_mode & 0o777 == 0o600
    keyed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key_file.read_text().strip()}"})
    async with keyed, Client(streamable_http_client(url, http_client=keyed)) as client:
        with trio.fail_after(LIMIT_S):
            listed = await client.list_tools()
    assert "runtime_send_message" in {tool.name for tool in listed.tools}


def test_a_ledger_from_before_modes_keeps_its_messages_and_reads_them_typed(
    tmp_path: Path,
) -> None:
    with contextlib.closing(sqlite3.connect(tmp_path / LEDGER_FILE)) as old:
        old.execute(
            "CREATE TABLE user_messages (seq INTEGER PRIMARY KEY, message_id TEXT NOT NULL,"
            " text TEXT NOT NULL, format TEXT NOT NULL, at TEXT NOT NULL)"
        )
        old.execute("INSERT INTO user_messages VALUES (4, 'm4', 'kept', 'plain', 'then')")
        old.commit()
    ledger = Ledger(tmp_path)
    try:
        ledger.add_user_message(5, "m5", "spoken", "plain", "now", mode="audio")
        assert [(m["text"], m["mode"]) for m in ledger.user_messages(0, 10)] == [
            ("kept", "im"),
            ("spoken", "audio"),
        ]
    finally:
        ledger.close()
