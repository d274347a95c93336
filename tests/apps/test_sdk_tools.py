"""Agent tool calls in a real app process, reported to a real `tool_router` actor.

A supervisor runs two children of this module: `app.tooltest`, a declared app whose
`@tool` handlers return, raise, report progress, finish later or block until killed, and
`tool_router`, a probe in the tool router's place that sends `app.tool.invoke` /
`app.tool.cancel` when the test asks (through the control socket) and writes every
`tool_router.report` it is handed into its own SQLite file: the independent record. Its
door takes only the closed report bodies the SDK promises. The app writes one line per
handler run into `runs.log` in its directory, so the tests count runs from outside.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

import pytest
import trio
from pydantic import ConfigDict, Field
from typing_extensions import TypedDict

from actors.kernel import APPS, Actor, Door, Message, accept, derive_id, handles
from apps.sdk import PENDING, RuntimeApp, ToolCall, declare_app, tool
from contracts import Code, ContractError
from tests.kernel.conftest import RuntimeFactory
from tests.kernel.helpers import Runtime, wait_until

SCOPE = "tooltest"
APP = f"app.{SCOPE}"
MODULE = __name__
WAIT = 30.0  # seconds: a deadline for each condition, never a pause
FINALS = ("result", "error")

# -- the probe in the tool router's place ------------------------------------------------

_CLOSED = ConfigDict(extra="forbid")


class ProgressReport(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    call_id: str
    kind: Literal["progress"]
    stage: NotRequired[str]
    percent: NotRequired[int]
    message: NotRequired[str]


class ResultReport(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    call_id: str
    kind: Literal["result"]
    output: dict[str, Any]


class ErrorReport(TypedDict):
    __pydantic_config__ = _CLOSED  # type: ignore[misc]
    call_id: str
    kind: Literal["error"]
    code: str
    message: NotRequired[str]


Report = Annotated[ProgressReport | ResultReport | ErrorReport, Field(discriminator="kind")]

PROBE_DOOR = Door(
    {
        "tool_router.report": accept(APPS, body=Report),
        "probe.invoke": accept("debug", body=dict[str, Any]),
        "probe.cancel": accept("debug", body=dict[str, Any]),
    }
)


class ToolRouterProbe(Actor):
    """Sends the invokes and cancels it is told to; records every report as delivered
    (no dedup of its own: a report delivered twice would be recorded twice)."""

    door = PROBE_DOOR

    async def on_start(self) -> None:
        self.db = sqlite3.connect(self.config["db"], isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS reports (pos INTEGER PRIMARY KEY, id TEXT, sender TEXT,"
            " call_id TEXT, kind TEXT, body TEXT)"
        )

    @handles("tool_router.report")
    async def report(self, msg: Message) -> None:
        body = msg.body
        self.db.execute(
            "INSERT INTO reports (id, sender, call_id, kind, body) VALUES (?, ?, ?, ?, ?)",
            (msg.id, msg.sender, body["call_id"], body["kind"], json.dumps(body)),
        )

    @handles("probe.invoke")
    async def invoke(self, msg: Message) -> None:
        # Each invoke gets an id derived from this request: the same call sent in another
        # request is another kernel message, as a tool router resending it would send.
        for call in msg.body["calls"]:
            await self.cast(msg.body["to"], "app.tool.invoke", call)

    @handles("probe.cancel")
    async def cancel(self, msg: Message) -> None:
        await self.cast(msg.body["to"], "app.tool.cancel", {"call_id": msg.body["call_id"]})


# -- the app ---------------------------------------------------------------------------

OBJECT: dict[str, Any] = {"type": "object"}


@declare_app(
    app_scope=SCOPE,
    version="0.1.0",
    entrypoints=[{"id": "main", "kind": "contextual"}],
    optional_features=["app.tools.v1"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class ToolTestApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.dir = Path(self.config["app_dir"])
        self.gathered = 0
        self.all_in = trio.Event()

    def ran(self, call: ToolCall) -> int:
        """Count this run in runs.log; how many runs the call has had."""
        with (self.dir / "runs.log").open("a") as runs:
            runs.write(call.call_id + "\n")
        return (self.dir / "runs.log").read_text().split().count(call.call_id)

    @tool("tt.echo", input_schema=OBJECT, output_schema=OBJECT)
    async def echo(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Returns its arguments (the one-parameter handler form)."""
        return {"echo": arguments}

    @tool("tt.boom", input_schema=OBJECT, output_schema=OBJECT)
    async def boom(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Fails with an exception whose text is private."""
        self.ran(call)
        raise RuntimeError("secret: the key is 1234")

    @tool("tt.denied", input_schema=OBJECT, output_schema=OBJECT)
    async def denied(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Refuses with an app's code."""
        raise ContractError(Code.PERMISSION_DENIED, "the user said no")

    @tool("tt.lies", input_schema=OBJECT, output_schema=OBJECT)
    async def lies(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Refuses with a code that is the runtime's, not an app's."""
        raise ContractError(Code.APP_DISABLED, "claims the app is disabled")

    @tool("tt.bad", input_schema=OBJECT, output_schema=OBJECT)
    async def bad(self, arguments: dict[str, Any]) -> object:
        """Returns what cannot be a call's output: a list, or a number JSON has not."""
        return [1] if arguments["what"] == "list" else {"x": float("nan")}

    @tool("tt.slow", input_schema=OBJECT, output_schema=OBJECT)
    async def slow(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Reports progress twice, then its result."""
        await call.progress("started", 0)
        await trio.sleep(0.05)
        await call.progress(percent=50, message="half way")
        return {"done": True}

    @tool("tt.gather", input_schema=OBJECT, output_schema=OBJECT)
    async def gather(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Returns once `n` calls of it are running at the same time."""
        self.ran(call)
        self.gathered += 1
        if self.gathered >= arguments["n"]:
            self.all_in.set()
        await self.all_in.wait()
        return {"together": self.gathered}

    @tool("tt.begin", input_schema=OBJECT, output_schema=OBJECT, call_model="operation")
    async def begin(self, arguments: dict[str, Any], call: ToolCall) -> object:
        """Starts an operation that `tt.finish` ends."""
        self.ran(call)
        return PENDING

    @tool("tt.finish", input_schema=OBJECT, output_schema=OBJECT)
    async def finish(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Completes the call `call_id` through `sdk.tools`; says what the SDK refused."""
        target = arguments["call_id"]
        try:
            await self.sdk.tools.progress(target, stage="finishing")
            await self.sdk.tools.complete(target, {"finished": True})
        except ContractError as exc:
            return {"refused": exc.code.value}
        return {"completed": target}

    @tool("tt.idem", input_schema=OBJECT, output_schema=OBJECT, idempotent=True)
    async def idem(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Blocks on its first run (until the process is killed), returns on the next."""
        runs = self.ran(call)
        await call.progress("started")
        if runs == 1:
            await trio.sleep_forever()
        return {"runs": runs}

    @tool("tt.rerun", input_schema=OBJECT, output_schema=OBJECT, rerun_after_restart=True)
    async def rerun(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Not idempotent for a new call, safe to run again for the same one: as `tt.idem`."""
        return await self.idem(arguments, call)

    @tool("tt.once", input_schema=OBJECT, output_schema=OBJECT)
    async def once(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Not idempotent: blocks until killed or cancelled."""
        self.ran(call)
        await call.progress("started")
        try:
            await trio.sleep_forever()
        finally:
            with (self.dir / "stopped.log").open("a") as stopped:
                stopped.write(call.call_id + "\n")
        return {}


# -- the runtime and the record ----------------------------------------------------------


@dataclass
class Tools:
    runtime: Runtime
    record: Path
    app_dir: Path

    def invoke(self, *calls: dict[str, Any]) -> None:
        self.runtime.send("tool_router", "probe.invoke", {"to": APP, "calls": list(calls)})

    def cancel(self, call_id: str) -> None:
        self.runtime.send("tool_router", "probe.cancel", {"to": APP, "call_id": call_id})

    def reports(self, call_id: str | None = None) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        with sqlite3.connect(self.record, timeout=10) as db:
            try:
                rows = db.execute("SELECT id, sender, body FROM reports ORDER BY pos").fetchall()
            except sqlite3.OperationalError:  # the probe has not created its table yet
                return []
        found = [{"id": i, "sender": s, **json.loads(body)} for i, s, body in rows]
        return [r for r in found if call_id is None or r["call_id"] == call_id]

    def finals(self, call_id: str) -> list[dict[str, Any]]:
        return [r for r in self.reports(call_id) if r["kind"] in FINALS]

    def final(self, call_id: str) -> dict[str, Any]:
        """The call's one final report, once it is recorded."""
        finals = wait_until(lambda: self.finals(call_id), WAIT, f"the final report of {call_id}")
        assert len(finals) == 1, finals
        return finals[0]

    def started(self, call_id: str, count: int = 1) -> None:
        def progressed() -> bool:
            stages = [r.get("stage") for r in self.reports(call_id) if r["kind"] == "progress"]
            return stages.count("started") >= count

        wait_until(progressed, WAIT, f"{call_id} to report it started")

    def runs(self, call_id: str) -> int:
        return _lines(self.app_dir / "runs.log").count(call_id)

    def settled(self) -> None:
        """Wait until the app has handled everything sent to it so far: a call sent after
        them is answered after them (one sender's messages are handled in order)."""
        marker = new_call("tt.echo")
        self.invoke(marker)
        self.final(marker["call_id"])


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def new_call(method: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "call_id": f"call_{uuid.uuid4().hex}",
        "method": method,
        "arguments": arguments or {},
        "app_scope": SCOPE,
        "conversation_id": "conv-1",
        "instance_id": f"{SCOPE}:conv-1",
    }


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tools]:
    root = tmp_path_factory.mktemp("sdk-tools")
    record, app_dir = root / "reports.db", root / "app"
    factory = RuntimeFactory(root / "runtimes")
    config = {
        "children": [
            {
                "name": "tool_router",
                "target": f"{MODULE}:ToolRouterProbe",
                "door": f"{MODULE}:PROBE_DOOR",
                "config": {"db": str(record)},
            },
            {
                "name": APP,
                "target": f"{MODULE}:ToolTestApp",
                "door": "apps.sdk.door:DOOR",
                "config": {"app_scope": SCOPE, "app_dir": str(app_dir)},
            },
        ],
        "app_door": "apps.sdk.door:DOOR",
        "app_supervisor": None,
        "max_restarts": 100,
        "max_seconds": 1.0,
        "backoff_max": 0.2,
    }
    runtime = factory(config, name="tools").start()
    runtime.wait_actor(APP)
    runtime.wait_actor("tool_router")
    yield Tools(runtime, record, app_dir)
    factory.cleanup()


# -- the tests -----------------------------------------------------------------------------


def test_results_errors_and_progress_arrive_with_their_codes(tools: Tools) -> None:
    echo, boom, denied, lies, nope, slow = (
        new_call("tt.echo", {"x": 1}),
        new_call("tt.boom"),
        new_call("tt.denied"),
        new_call("tt.lies"),
        new_call("tt.nope"),
        new_call("tt.slow"),
    )
    listed, nan = new_call("tt.bad", {"what": "list"}), new_call("tt.bad", {"what": "nan"})
    tools.invoke(echo, boom, denied, lies, nope, slow, listed, nan)

    result = tools.final(echo["call_id"])
    assert result["sender"] == APP
    assert {k: result[k] for k in ("kind", "output")} == {
        "kind": "result",
        "output": {"echo": {"x": 1}},
    }
    failed = tools.final(boom["call_id"])
    assert (failed["code"], failed["message"]) == (
        "handler_failed",
        "the handler of tt.boom failed",
    )
    assert "RuntimeError" not in failed["message"] and "secret" not in failed["message"]
    refused = tools.final(denied["call_id"])
    assert (refused["code"], refused["message"]) == ("permission_denied", "the user said no")
    # A code that is the runtime's to give is no app's: the call failed.
    assert tools.final(lies["call_id"])["code"] == "handler_failed"
    for call, why in ((listed, "the output is not an object"), (nan, "the output is not JSON")):
        bad = tools.final(call["call_id"])
        assert (bad["code"], bad["message"]) == ("handler_failed", why)
    missing = tools.final(nope["call_id"])
    assert (missing["code"], missing["message"]) == ("handler_failed", "no handler for tt.nope")

    tools.final(slow["call_id"])
    reports = tools.reports(slow["call_id"])
    assert [{k: v for k, v in r.items() if k not in ("id", "sender")} for r in reports] == [
        {"call_id": slow["call_id"], "kind": "progress", "stage": "started", "percent": 0},
        {"call_id": slow["call_id"], "kind": "progress", "percent": 50, "message": "half way"},
        {"call_id": slow["call_id"], "kind": "result", "output": {"done": True}},
    ]
    # Report n of a call has a kernel id of its own, derived from the call id and n.
    assert [r["id"] for r in reports] == [derive_id(slow["call_id"], n) for n in range(3)]

    # The traceback went to the app's log, not to the agent.
    log = tools.runtime.data_dir / "logs" / f"{APP}.log"
    text = wait_until(
        lambda: log.exists() and "secret: the key" in log.read_text() and log.read_text(),
        WAIT,
        "the traceback in the app's log",
    )
    assert "Traceback" in text


def test_fifty_concurrent_calls_all_finish_once(tools: Tools) -> None:
    calls = [new_call("tt.gather", {"n": 50}) for _ in range(50)]
    tools.invoke(*calls)
    # Each handler returns only once all fifty run at the same time: the app's mailbox
    # went on while they waited.
    for call in calls:
        assert tools.final(call["call_id"])["output"] == {"together": 50}
    for call in calls:
        assert tools.runs(call["call_id"]) == 1
    assert len(tools.reports()) == len({r["id"] for r in tools.reports()})


def test_a_redelivered_invoke_does_not_run_the_handler_again(tools: Tools) -> None:
    done, waiting = new_call("tt.boom"), new_call("tt.begin")
    tools.invoke(done, waiting)
    first = tools.final(done["call_id"])
    tools.settled()
    assert tools.runs(waiting["call_id"]) == 1

    # The same calls again, in new kernel messages: nothing runs twice. The finished
    # call's report is sent again with its id, so the mailbox delivers it once.
    tools.invoke(done, waiting)
    tools.invoke(done)
    tools.settled()
    assert tools.runs(done["call_id"]) == 1
    assert tools.runs(waiting["call_id"]) == 1
    assert tools.finals(done["call_id"]) == [first]
    assert tools.finals(waiting["call_id"]) == []


def test_a_pending_call_ends_through_sdk_tools_and_only_the_apps_own(tools: Tools) -> None:
    operation = new_call("tt.begin")
    tools.invoke(operation)
    tools.settled()
    assert tools.finals(operation["call_id"]) == []

    finisher = new_call("tt.finish", {"call_id": operation["call_id"]})
    tools.invoke(finisher)
    assert tools.final(finisher["call_id"])["output"] == {"completed": operation["call_id"]}
    reports = tools.reports(operation["call_id"])
    assert [(r["kind"], r.get("stage"), r.get("output")) for r in reports] == [
        ("progress", "finishing", None),
        ("result", None, {"finished": True}),
    ]

    # A call id that is not one of the app's open calls: another's, or one already ended.
    for target in ("call_of_another_app", operation["call_id"]):
        foreign = new_call("tt.finish", {"call_id": target})
        tools.invoke(foreign)
        assert tools.final(foreign["call_id"])["output"] == {"refused": "ownership_mismatch"}
    assert tools.reports("call_of_another_app") == []
    assert len(tools.finals(operation["call_id"])) == 1


def test_cancel_stops_a_running_handler(tools: Tools) -> None:
    running = new_call("tt.once")
    tools.invoke(running)
    tools.started(running["call_id"])
    tools.cancel(running["call_id"])
    wait_until(
        lambda: running["call_id"] in _lines(tools.app_dir / "stopped.log"),
        WAIT,
        "the handler to be cancelled",
    )
    # The runtime has ended the call: the app sends no final, and does not run it again.
    tools.invoke(running)
    tools.cancel("call_never_seen")
    tools.settled()
    assert tools.finals(running["call_id"]) == []
    assert tools.runs(running["call_id"]) == 1


def test_after_a_sigkill_an_idempotent_call_runs_again_and_another_fails(tools: Tools) -> None:
    idem, once, rerun = new_call("tt.idem"), new_call("tt.once"), new_call("tt.rerun")
    tools.invoke(idem, once, rerun)
    for call in (idem, once, rerun):
        tools.started(call["call_id"])
    pid = tools.runtime.pid_of(APP)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: tools.runtime.pid_of(APP) not in (None, pid), WAIT, "the app's restart")

    assert tools.final(idem["call_id"])["output"] == {"runs": 2}
    failed = tools.final(once["call_id"])
    assert (failed["code"], failed["message"]) == (
        "handler_failed",
        "the app stopped while running it",
    )
    assert tools.runs(idem["call_id"]) == 2
    assert tools.runs(once["call_id"]) == 1
    # Declared safe to run again for the same call, though not idempotent: run again.
    assert tools.final(rerun["call_id"])["output"] == {"runs": 2}
    assert tools.runs(rerun["call_id"]) == 2
    # Each report kept its own index across the restart: progress, progress again, result.
    assert [r["id"] for r in tools.reports(idem["call_id"])] == [
        derive_id(idem["call_id"], n) for n in range(3)
    ]

    # Redelivered after the restart, they run no more and end no more.
    tools.invoke(idem, once)
    tools.settled()
    assert tools.runs(idem["call_id"]) == 2
    assert tools.runs(once["call_id"]) == 1
    # The restarted app sent every finished call's final again, each under its first id:
    # no call in the record has two.
    finals = [r["call_id"] for r in tools.reports() if r["kind"] in FINALS]
    assert len(finals) == len(set(finals))
