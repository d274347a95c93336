"""The exported JSON Schemas: committed copies are current, valid 2020-12, and every golden
fixture conforms to them (so a schema change that breaks a fixture cannot go unnoticed)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from contracts import (
    MESSAGE_TYPES,
    diff_schemas,
    export_schemas,
    schemas_dir,
    write_schemas,
)
from tests.contracts._data import files, load

REGENERATE = "regenerate with `lineup protocol schemas contracts/schemas`"


@cache
def committed(name: str) -> Draft202012Validator:
    schema = load(schemas_dir() / f"{name}.json")
    return Draft202012Validator(schema)


def _conforms(name: str, value: Any) -> None:
    errors = sorted(committed(name).iter_errors(value), key=lambda e: list(e.absolute_path))
    assert not errors, f"{name}: {errors[0].message} at {list(errors[0].absolute_path)}"


def test_committed_schemas_match_the_models() -> None:
    assert diff_schemas(schemas_dir()) == [], REGENERATE


def test_a_changed_schema_is_noticed(tmp_path: Any) -> None:
    write_schemas(tmp_path)
    assert diff_schemas(tmp_path) == []
    victim = tmp_path / "runtime-envelope.v1.json"
    victim.write_text(victim.read_text().replace('"maxLength": 64', '"maxLength": 65'))
    (tmp_path / "stale.v0.json").write_text("{}")
    (tmp_path / "wire.ping.v1.json").unlink()
    assert diff_schemas(tmp_path) == [
        "changed: runtime-envelope.v1.json",
        "missing: wire.ping.v1.json",
        "unexpected: stale.v0.json",
    ]


@pytest.mark.parametrize("name", sorted(export_schemas()))
def test_every_schema_is_valid_draft_2020_12(name: str) -> None:
    schema = export_schemas()[name]
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"urn:lineup:schema:{name}"


def test_every_message_type_has_a_payload_schema() -> None:
    names = set(export_schemas())
    assert {f"payload.{type_}" for type_ in MESSAGE_TYPES} <= names


def test_golden_envelopes_conform_to_the_committed_schemas() -> None:
    for path in files("envelopes/valid/*.json"):
        envelope = load(path)
        _conforms("runtime-envelope.v1", envelope)
        _conforms(f"payload.{envelope['type']}", envelope["payload"])


def test_golden_legacy_messages_conform_to_the_committed_schemas() -> None:
    for path in files("legacy/pairs/*.json"):
        legacy = load(path)["legacy"]
        _conforms("legacy-message.v1", legacy)
        if f"legacy-payload.{legacy['type']}" in export_schemas():
            _conforms(f"legacy-payload.{legacy['type']}", legacy["payload"])


def test_golden_manifests_tools_and_frames_conform_to_the_committed_schemas() -> None:
    for path in files("manifests/valid/*.json"):
        _conforms("app-manifest.v1", load(path))
    for path in files("tools/valid/*.json"):
        _conforms("tool-descriptor.v1", load(path))
    for path in files("wire/sessions/*.json"):
        for step in load(path):
            _conforms("wire.frame.v1", step["frame"])
            _conforms(f"wire.{step['frame']['frame']}.v1", step["frame"])


def test_schema_rejects_what_the_grammar_rejects() -> None:
    envelope = load(files("envelopes/valid/message.agent-to-chat.json")[0])
    for path, bad in ((("scope", "app_scope"), "Chat"), (("id",), "not-a-ulid")):
        mutated = {**envelope, path[0]: dict(envelope[path[0]]) if len(path) > 1 else bad}
        if len(path) > 1:
            mutated[path[0]][path[1]] = bad
        assert list(committed("runtime-envelope.v1").iter_errors(mutated)), path
