"""An app's own actions on its deadline operations, through the real runtime: the clocks
app (built, signed and installed like any app) finishes one early with its own output,
pauses and resumes one (across a SIGKILL of the tool router and a restart of the whole
runtime), and stops one for the user; the same app installed under another scope, the
rival, tries each of them on the clocks' operation and is refused. Every assertion reads a
record the runtime kept: runtime.db (calls, operations, outbox, audit), the AppServer's
store, and what the app was told."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from actors.tool_router import read_inventories, read_tool_deadlines
from tests.app_manager.conftest import lineup
from tests.kernel.helpers import REPO_ROOT
from tests.runtime.helpers import CONVERSATION, Stack, wait_for

from .helpers import (
    Agent,
    app,
    conversation_open,
    final_of,
    finals,
    sent,
    stream_finals,
)

# How late the tool router may notice a deadline: it looks every 0.1 s, on a loaded machine.
NOTICE_MS = 2000


def _build(root: Path, scope: str, key: Path) -> Path:
    source = root / scope
    shutil.copytree(
        REPO_ROOT / "tests" / "tools" / "clocks",
        source,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    code_file = source / "_app.py"
    code_file.write_text(
        code_file.read_text().replace('app_scope="clocks"', f'app_scope="{scope}"')
    )
    bundle = root / f"{scope}.bundle"
    code, _, err = lineup("app", "build", source, "--out", bundle)
    assert code == 0, err
    code, _, err = lineup("app", "sign", bundle, "--key", key)
    assert code == 0, err
    return bundle


@pytest.fixture(scope="session")
def clocks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the signed clocks bundle, the signed rival bundle, their publisher's public key)."""
    root = tmp_path_factory.mktemp("clocks")
    code, _, err = lineup("app", "keygen", "--out", root / "keys", "--name", "clockmaker")
    assert code == 0, err
    key = root / "keys" / "clockmaker.key"
    return _build(root, "clocks", key), _build(root, "rival", key), key.with_suffix(".pub")


async def _ready(stack: Stack, clocks: tuple[Path, Path, Path]) -> tuple[Agent, Agent]:
    """Both apps installed, enabled and in the inventory: (the clocks, the rival)."""
    client, first = await conversation_open(stack)
    own, rival, key = clocks
    (stack.data_dir / "trusted_keys").mkdir(exist_ok=True)
    shutil.copy(key, stack.data_dir / "trusted_keys")
    for bundle, scope in ((own, "clocks"), (rival, "rival")):
        app(stack, "install", bundle)
        app(stack, "enable", scope)
    await wait_for(
        lambda: _published(stack, {"clock.run", "clock.act"}, first), 30, "both apps published"
    )
    return Agent(stack, client, "clocks"), Agent(stack, client, "rival")


def _published(stack: Stack, methods: set[str], above: int) -> bool:
    rows = [r for r in read_inventories(stack.data_dir) if r["conversation_id"] == CONVERSATION]
    if not rows:
        return False
    (row,) = rows
    scopes = {(t["app_scope"], t["method"]) for t in row["payload"]["tools"]}
    wanted = {(s, m) for s in ("clocks", "rival") for m in methods}
    return int(row["revision"]) > above and wanted <= scopes


def _operation(stack: Stack, call_id: str) -> dict[str, Any]:
    return read_tool_deadlines(stack.data_dir).get(call_id) or {}


async def _in_state(stack: Stack, call_id: str, state: str) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        operation = _operation(stack, call_id)
        return operation if operation.get("state") == state else None

    return await wait_for(reached, 30, f"the operation of {call_id} {state}")


def _now_ms() -> int:
    return int(time.time() * 1000)


class Acts:
    """`clock.act` calls of one app, each its own call id: what the runtime answered it."""

    def __init__(self, agent: Agent) -> None:
        self.agent, self.count = agent, 0

    async def __call__(self, call_id: str, action: str, **more: Any) -> dict[str, Any]:
        self.count += 1
        act_id = f"call_{self.agent.app_scope}_act{self.count}"
        row = await self.agent.call(
            act_id, "clock.act", arguments={"call_id": call_id, "action": action, **more}
        )
        assert row["state"] == "succeeded", row
        return dict(row["output"])


def _told(stack: Stack, call_id: str) -> list[str]:
    path = stack.data_dir / "apps" / "clocks" / "told.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [line.split()[1] for line in lines if line.split()[0] == call_id]


async def test_the_app_finishes_its_own_operation_once_and_no_other_app_can(
    stack: Stack, clocks: tuple[Path, Path, Path]
) -> None:
    own, rival = await _ready(stack, clocks)
    act, rival_act = Acts(own), Acts(rival)

    # Finished early with the app's output: the agent's one final is that output.
    await own.client.submit(own.invoke("call_f1", "clock.run", {"seconds": 60}))
    await _in_state(stack, "call_f1", "running")
    assert await act("call_f1", "finish", output={"said": "early"}) == {"answer": True}
    row = await final_of(stack, "call_f1")
    assert (row["state"], row["output"]) == ("succeeded", {"said": "early"}), row
    ended = _operation(stack, "call_f1")
    assert (ended["state"], ended["ended_by"]) == ("finished", "app")
    assert ended["ended_ms"] < ended["ends_ms"]
    assert await act("call_f1", "finish", output={"said": "again"}) == {"answer": False}
    assert [f["payload"] for f in finals(stack, "call_f1")] == [{"output": {"said": "early"}}]
    await wait_for(lambda: "call_f1" in stream_finals(stack), 30, "the final streamed")
    assert stream_finals(stack)["call_f1"] == ["lineup.tool.result"]

    # An output off the tool's schema is refused and the operation runs to its deadline.
    await own.client.submit(own.invoke("call_f2", "clock.run", {"seconds": 2}))
    running = await _in_state(stack, "call_f2", "running")
    misfit = await act("call_f2", "finish", output={"said": 5})
    assert misfit == {"refused": "invalid_payload"}
    assert _operation(stack, "call_f2")["state"] == "running"
    row = await final_of(stack, "call_f2")
    assert (row["state"], row["output"]["state"]) == ("succeeded", "finished"), row
    assert _operation(stack, "call_f2")["ended_ms"] == running["ends_ms"]
    assert _operation(stack, "call_f2")["ended_by"] == "deadline"
    assert await act("call_f2", "finish", output={"said": "late"}) == {"answer": False}
    assert len(finals(stack, "call_f2")) == 1

    # The rival, signed and installed like any app, acts on the clocks' operation: each
    # action is refused as for no operation, and the operation is untouched.
    await own.client.submit(own.invoke("call_h", "clock.run", {"seconds": 60}))
    before = await _in_state(stack, "call_h", "running")
    for action, more in (
        ("finish", {"output": {"said": "forged"}}),
        ("pause", {}),
        ("resume", {}),
        ("interrupt", {}),
    ):
        assert await rival_act("call_h", action, **more) == {"refused": "ownership_mismatch"}
    # Ended or open, another app's operation answers the same: nothing says it exists.
    assert await rival_act("call_f1", "finish", output={"said": "x"}) == {
        "refused": "ownership_mismatch"
    }
    assert await rival_act("call_none", "pause") == {"refused": "ownership_mismatch"}
    assert _operation(stack, "call_h") == before
    assert not finals(stack, "call_h")
    await stack.audited(
        lambda a: (
            a["code"] == "ownership_mismatch"
            and "app.rival reported on call_h of clocks" in a["detail"]
        )
    )

    # The app stops it for the user: cancelled_by_user, ended by the app.
    stopped = await act("call_h", "interrupt")
    assert (stopped["answer"]["state"], stopped["answer"]["ended_by"]) == ("interrupted", "app")
    row = await final_of(stack, "call_h")
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user"), row
    assert row["detail"].startswith("interrupted by the user, through the app; it was to end at")
    assert await act("call_h", "pause") == {"refused": "ownership_mismatch"}
    assert await act("call_h", "finish", output={"said": "late"}) == {"answer": False}
    assert len(finals(stack, "call_h")) == 1


async def test_a_pause_holds_across_kills_and_a_restart_and_the_resume_counts_what_was_left(
    stack: Stack, clocks: tuple[Path, Path, Path]
) -> None:
    own, _ = await _ready(stack, clocks)
    act = Acts(own)

    await own.client.submit(own.invoke("call_p", "clock.run", {"seconds": 3}))
    started = await _in_state(stack, "call_p", "running")
    paused = (await act("call_p", "pause"))["answer"]
    assert paused["state"] == "paused" and "ends_at" not in paused
    left = paused["remaining_ms"]
    assert 0 < left < 3000
    stored = _operation(stack, "call_p")
    assert (stored["state"], stored["ends_ms"], stored["remaining_ms"]) == ("paused", None, left)
    assert (await act("call_p", "pause"))["answer"] == paused  # paused already: as it is
    # The operator sees it paused, with the time it has left.
    code, out, err = lineup("tools", "calls", "--data-dir", stack.data_dir)
    assert code == 0, err
    line = next(line for line in out.splitlines() if "call_p" in line)
    assert "paused," in line, out

    # The tool router is killed; the first deadline passes; nothing ends it.
    assert stack.kill("tool_router")
    await wait_for(
        lambda: _now_ms() > started["ends_ms"] + 1000, 30, "the first deadline long past"
    )
    assert _operation(stack, "call_p")["state"] == "paused"
    assert not finals(stack, "call_p")

    before = _now_ms()
    resumed = (await act("call_p", "resume"))["answer"]
    after = _now_ms()
    assert resumed["state"] == "running" and "remaining_ms" not in resumed
    ends_ms = _operation(stack, "call_p")["ends_ms"]
    assert before <= ends_ms - left <= after
    row = await final_of(stack, "call_p")
    assert row["state"] == "succeeded", row
    ended = _operation(stack, "call_p")
    assert (ended["state"], ended["ended_ms"]) == ("finished", ends_ms)
    assert ended["noticed_ms"] - ends_ms < NOTICE_MS
    assert len(finals(stack, "call_p")) == 1
    # The agent heard of the pause and the resume; the app's listener of each step.
    stages = [
        (env["payload"].get("stage"), env["payload"].get("ends_at") is not None)
        for env in sent(stack, "lineup.tool.progress")
        if env["correlation"]["call_id"] == "call_p"
    ]
    assert stages == [("started", True), ("paused", False), ("resumed", True)], stages
    await wait_for(lambda: len(_told(stack, "call_p")) >= 4, 30, "the app told of the end")
    assert _told(stack, "call_p") == ["running", "paused", "running", "finished"]

    # Paused, then the whole runtime killed and started again: still paused, resumable.
    await own.client.submit(own.invoke("call_q", "clock.run", {"seconds": 60}))
    await _in_state(stack, "call_q", "running")
    left = (await act("call_q", "pause"))["answer"]["remaining_ms"]
    runtime = stack.runtime
    assert runtime is not None
    runtime.kill9()
    await stack.start_runtime()
    assert (await act("call_q", "pause"))["answer"]["remaining_ms"] == left
    before = _now_ms()
    await act("call_q", "resume")
    assert _operation(stack, "call_q")["ends_ms"] - left >= before
    assert (await act("call_q", "interrupt"))["answer"]["ended_by"] == "app"
    row = await final_of(stack, "call_q")
    assert (row["state"], row["code"]) == ("failed", "cancelled_by_user"), row
    assert len(finals(stack, "call_q")) == 1
