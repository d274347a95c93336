"""`lineup protocol`: real subprocesses, real stdin, real exit codes."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contracts import diff_schemas
from lineup import protocol_cmd
from tests.contracts._data import files, load

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "lineup.protocol_cmd", *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _validate(message: Any, *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = _run("validate", *args, stdin=json.dumps(message).encode())
    assert not err, err
    return code, json.loads(out)


def test_validate_accepts_a_canonical_envelope() -> None:
    envelope = load(files("envelopes/valid/tool.invoke.json")[0])
    assert _validate(envelope) == (0, {"ok": True, "envelope": envelope})


def test_validate_maps_a_legacy_message_to_its_canonical_form() -> None:
    case = load(files("legacy/pairs/message.current-conversation.json")[0])
    code, verdict = _validate(case["legacy"], "--conversation", "conv-current")
    assert (code, verdict) == (0, {"ok": True, "envelope": case["canonical"]})


def test_validate_rejects_with_a_code_and_exit_1() -> None:
    case = load(files("envelopes/rejected/tool-invoke-from-user.json")[0])
    code, verdict = _validate(case["input"])
    assert code == 1
    assert verdict["ok"] is False
    assert verdict["code"] == "sender_not_allowed"
    assert verdict["detail"].startswith("sender.kind")


def test_validate_other_kinds() -> None:
    manifest = load(files("manifests/invalid/unknown-feature.json")[0])["manifest"]
    assert _validate(manifest, "--kind", "manifest")[1]["code"] == "app_incompatible"
    frame = load(files("wire/sessions/runtime.json")[0])[0]["frame"]
    assert _validate(frame, "--kind", "frame") == (0, {"ok": True, "frame": frame})


def test_schemas_writes_what_is_committed(tmp_path: Path) -> None:
    code, out, _ = _run("schemas", str(tmp_path))
    assert code == 0 and "wrote" in out
    assert diff_schemas(tmp_path) == []
    assert _run("schemas", "--check", str(tmp_path))[0] == 0
    (tmp_path / "codes.v1.json").write_text("{}\n")
    code, out, err = _run("schemas", "--check", str(tmp_path))
    assert (code, out.strip()) == (1, "changed: codes.v1.json")
    assert "lineup protocol schemas" in err


@pytest.mark.parametrize("argv", [["-h"], ["validate", "-h"], ["schemas", "-h"]])
def test_every_command_has_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        protocol_cmd.main(argv)
    assert exited.value.code == 0
    assert len(capsys.readouterr().out) > 200


def test_register_plugs_into_any_parser() -> None:
    parser = argparse.ArgumentParser(prog="lineup")
    protocol_cmd.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["protocol", "schemas", "out"])
    assert args.dir == "out" and callable(args.func)


def test_messages_lists_what_every_door_takes_as_the_doors_declare_it() -> None:
    from actors.kernel import load_door
    from actors.runtime_children import APP_DOOR, RUNTIME_CHILDREN, WEB_HOST
    from actors.tool_router.door import Report

    code, out, err = _run("messages", "--json")
    assert (code, err) == (0, "")
    listed = {(m["to"], m["type"]): m for m in json.loads(out)["messages"]}
    doors = {c.name: c.door for c in [*RUNTIME_CHILDREN, WEB_HOST] if not c.name.startswith("app.")}
    doors["app.*"] = APP_DOOR
    declared = {
        (to, type_): load_door(door).accepts[type_]
        for to, door in doors.items()
        for type_ in load_door(door).accepts
    }
    assert set(listed) == set(declared)  # every type of every door, nothing else
    for key, rule in declared.items():
        assert set(listed[key]["from"]) == set(rule.senders) | {"debug"}, key
    # A body is its declared type's schema: the fields are the TypedDict's own.
    report = listed[("tool_router", "tool_router.report")]
    assert set(report["body"]["properties"]) == set(Report.__annotations__)
    assert report["from"] == ["app.*", "debug"]
    assert listed[("tool_router", "tool_router.interrupt")]["from"] == ["app.chat", "debug"]


def test_messages_reads_as_a_table_and_names_what_is_not_an_actor() -> None:
    code, out, _ = _run("messages", "--to", "tool_router")
    assert code == 0
    assert "tool_router.report" in out and "any app" in out and "store.audit" not in out
    code, out, err = _run("messages", "--to", "nobody")
    assert code == 2 and out == ""
    assert err.startswith("error: no actor 'nobody' takes messages: one of app.*,"), err
    assert "Traceback" not in err


def test_the_messages_page_is_generated_from_the_doors() -> None:
    """docs/messages.md is `lineup protocol messages --markdown` as the doors are now: a
    door changed without the page regenerated fails here."""
    from lineup._protocol_messages import catalogue, markdown

    page = Path(__file__).resolve().parents[2] / "docs" / "messages.md"
    assert page.read_text(encoding="utf-8") == markdown(catalogue()), (
        "regenerate it: lineup protocol messages --markdown > docs/messages.md"
    )


def test_messages_as_markdown_has_a_table_for_each_door(capsys: pytest.CaptureFixture[str]) -> None:
    from lineup._protocol_messages import catalogue

    assert protocol_cmd.main(["messages", "--markdown"]) == 0
    out = capsys.readouterr().out
    recipients = {entry["to"] for entry in catalogue()}
    assert out.count("\n## ") == len(recipients)
    assert "| `router.inbound` | debug, transport |" in out
