"""An app's manifest comes from its declarations, and from nowhere else."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.app_manager._bundle import read_bundle
from apps import pomodoro
from apps.pomodoro import PomodoroApp
from apps.sdk import (
    RuntimeApp,
    declare_app,
    declared_app,
    declared_tools,
    manifest_of,
    tool,
    tool_handlers,
)
from contracts import Code, ContractError, validate_manifest
from tests.apps.conftest import Signed

OBJECT = {"type": "object", "additionalProperties": False}


def test_the_pomodoro_manifest_is_what_its_declarations_say() -> None:
    manifest = manifest_of(PomodoroApp)
    assert validate_manifest(manifest).model_dump(mode="json", exclude_none=True) == manifest
    assert (manifest["app_scope"], manifest["version"], manifest["title"]) == (
        "pomodoro", "0.1.0", "Pomodoro",
    )  # fmt: skip
    assert manifest["runtime_sdk"]["required_features"] == [
        "app.lifecycle.v1",
        "app.tools.v1",
        "app.session-data.v1",
    ]
    assert manifest["runtime_sdk"]["optional_features"] == []
    assert manifest["agent_subscriptions"] == [
        {"type": "lineup.tool.invoke", "scope": "conversation"}
    ]
    # The timer's surface emits the user's buttons, with no payload at all.
    (timer,) = manifest["entrypoints"]
    assert (timer["id"], timer["kind"], timer["surface"]) == (
        "timer",
        "contextual",
        "ui/index.html",
    )
    assert timer["surface_events"] == [
        {"name": name, "payload_schema": {"type": "object", "additionalProperties": False}}
        for name in ("pause", "resume", "interrupt")
    ]
    tools = {entry["method"]: entry for entry in manifest["tools"]}
    assert list(tools) == ["pomodoro.start", "pomodoro.status", "pomodoro.stop"]
    start = tools["pomodoro.start"]
    assert start["input_schema"] == {
        "type": "object",
        "properties": {
            "minutes": {"type": "integer", "minimum": 1, "maximum": 120},
            "seconds": {"type": "integer", "minimum": 5, "maximum": 3600},
        },
        "oneOf": [{"required": ["minutes"]}, {"required": ["seconds"]}],
        "additionalProperties": False,
    }
    assert start["activation_requirement"] == "foreground_required"
    assert (start["handling"], start["call_model"]) == ("runtime_operation", "operation")
    assert start["launch_policy"] == {
        "launch": "if_needed",
        "focus": "foreground",
        "restore_focus": True,
    }
    assert start["description"].startswith("Starts a timer of `minutes`")  # the docstring
    assert tools["pomodoro.status"]["call_model"] == "query"
    assert tools["pomodoro.stop"]["launch_policy"]["launch"] == "never"
    for method, declaration in declared_tools(PomodoroApp).items():
        dumped = declaration.descriptor.model_dump(mode="json", exclude_none=True)
        assert tools[method] == dumped
    assert PomodoroApp.app_version == "0.1.0"
    assert PomodoroApp.app_kind == "installed"


def test_the_bundle_carries_the_generated_manifest(signed: Signed) -> None:
    assert json.loads(read_bundle(signed.data()).manifest) == manifest_of(PomodoroApp)


def test_a_build_finds_the_declared_app() -> None:
    assert declared_app(pomodoro) is PomodoroApp


def test_the_handlers_are_by_method_and_the_status_is_the_runtimes_record() -> None:
    now = [1_000_000.0]
    app = PomodoroApp(clock=lambda: now[0])
    assert list(tool_handlers(app)) == ["pomodoro.start", "pomodoro.status", "pomodoro.stop"]
    # The timer is the runtime's deadline operation; the status reads its record.
    assert app._session(None) == {"state": "idle"}
    running = {
        "state": "running",
        "display": {"minutes": 25},
        "ends_at": "1970-01-12T13:46:50.000Z",  # 1,000,010 s
    }
    assert app._session(running) == {
        "state": "running",
        "minutes": 25,
        "ends_at": "1970-01-12T13:46:50.000Z",
        "remaining_seconds": 10,
    }
    # Paused, it has no end: what is left is kept, in whole seconds up.
    paused = {"state": "paused", "display": {"minutes": 25}, "remaining_ms": 9_001}
    assert app._session(paused) == {"state": "paused", "minutes": 25, "remaining_seconds": 10}
    ended = {**running, "state": "interrupted", "ended_at": "1970-01-12T13:46:45.000Z"}
    assert app._session(ended)["state"] == "stopped"
    assert app._session({**running, "state": "finished"})["state"] == "finished"


def test_a_bad_tool_declaration_fails_at_import() -> None:
    with pytest.raises(ContractError) as caught:

        @tool("Bad Method", input_schema=OBJECT, output_schema=OBJECT)
        async def handler(self: Any, arguments: dict[str, Any]) -> dict[str, Any]:
            return {}

    assert caught.value.code is Code.INVALID_TOOL_DESCRIPTOR
    assert caught.value.detail.startswith("method")
    with pytest.raises(ContractError) as caught:

        @tool("x.y", input_schema={"type": "array"}, output_schema=OBJECT)
        async def handler2(self: Any, arguments: dict[str, Any]) -> dict[str, Any]:
            return {}

    assert caught.value.detail.startswith("input_schema")


def test_a_bad_app_declaration_fails_at_import() -> None:
    # Tools without a `lineup.tool.invoke` subscription: the manifest's own rule.
    with pytest.raises(ContractError) as caught:

        @declare_app(
            app_scope="timer",
            version="1.0.0",
            entrypoints=[{"id": "main", "kind": "primary"}],
            required_features=["app.tools.v1"],
        )
        class Timer(RuntimeApp):
            @tool("timer.start", input_schema=OBJECT, output_schema=OBJECT)
            async def start(self, arguments: dict[str, Any]) -> dict[str, Any]:
                return {}

    assert caught.value.code is Code.INVALID_MANIFEST
    assert caught.value.detail.startswith("agent_subscriptions")


def test_a_subclass_can_override_or_withdraw_a_tool() -> None:
    @declare_app(
        app_scope="quiet-pomodoro",
        version="0.2.0",
        entrypoints=[{"id": "timer", "kind": "contextual"}],
        required_features=["app.lifecycle.v1"],
        optional_features=["app.tools.v1"],
        agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
    )
    class QuietPomodoro(PomodoroApp):
        async def stop(self, arguments: dict[str, Any]) -> dict[str, Any]:  # no longer a tool
            return {"stopped": False}

    methods = [entry["method"] for entry in manifest_of(QuietPomodoro)["tools"]]
    assert methods == ["pomodoro.start", "pomodoro.status"]
    assert manifest_of(PomodoroApp)["version"] == "0.1.0"  # the base is untouched
    with pytest.raises(TypeError):
        manifest_of(type("Undeclared", (PomodoroApp,), {}))
