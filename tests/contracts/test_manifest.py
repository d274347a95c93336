"""App manifests and tool descriptors: valid samples pass, invalid ones name
their first violation, and SDK features are checked against what this runtime offers."""

from __future__ import annotations

import copy
import re
import time
from pathlib import Path

import pytest

from contracts import (
    RUNTIME_SDK_FEATURES,
    SDK_FEATURES,
    Code,
    ContractError,
    ToolDescriptor,
    check_sdk_compatibility,
    check_tool_arguments,
    check_tool_output,
    validate_manifest,
    validate_tool_descriptor,
)
from tests.contracts._data import files, ids, load

VALID_MANIFESTS = files("manifests/valid/*.json")
INVALID_MANIFESTS = files("manifests/invalid/*.json")
VALID_TOOLS = files("tools/valid/*.json")
INVALID_TOOLS = files("tools/invalid/*.json")


@pytest.mark.parametrize("path", VALID_MANIFESTS, ids=ids(VALID_MANIFESTS))
def test_valid_manifest_passes_and_round_trips(path: Path) -> None:
    """Valid as the contract specifies it: against every feature the contract names."""
    manifest = validate_manifest(path.read_bytes(), offered_features=SDK_FEATURES)
    dumped = manifest.model_dump(mode="json", exclude_none=True)
    assert validate_manifest(dumped, offered_features=SDK_FEATURES) == manifest
    assert check_sdk_compatibility(manifest, offered_features=SDK_FEATURES).compatible


@pytest.mark.parametrize("path", VALID_MANIFESTS, ids=ids(VALID_MANIFESTS))
def test_this_runtime_refuses_what_it_does_not_serve(path: Path) -> None:
    """A manifest requiring a feature this runtime does not serve yet is `app_incompatible`,
    naming each such feature: it is not installed to get nothing."""
    manifest = validate_manifest(path.read_bytes(), offered_features=SDK_FEATURES)
    unserved = [f for f in manifest.runtime_sdk.required_features if f not in RUNTIME_SDK_FEATURES]
    if not unserved:
        assert validate_manifest(path.read_bytes()) == manifest
        return
    with pytest.raises(ContractError) as caught:
        validate_manifest(path.read_bytes())
    assert caught.value.code is Code.APP_INCOMPATIBLE
    assert caught.value.detail.endswith("missing " + ", ".join(unserved))


def test_the_runtime_serves_only_features_the_contract_names() -> None:
    assert RUNTIME_SDK_FEATURES < SDK_FEATURES


def test_the_protocol_tells_which_features_are_served() -> None:
    protocol = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    rows = re.findall(r"^\| `([a-z.\-]+\.v\d+)` \| (.+?) \|$", protocol, re.M)
    assert {feature for feature, _ in rows} == SDK_FEATURES
    assert {feature for feature, served in rows if served == "yes"} == RUNTIME_SDK_FEATURES


def test_the_seed_example_is_valid_as_written() -> None:
    raw = files("manifests/valid/whiteboard.json")[0].read_bytes()
    manifest = validate_manifest(raw, offered_features=SDK_FEATURES)
    tool = manifest.tool("board.create")
    assert tool is not None
    assert (tool.activation_requirement, tool.handling, tool.delivery) == (
        "app_ready", "direct", "miniapp_sdk",
    )  # fmt: skip
    assert manifest.tool("board.delete") is None


@pytest.mark.parametrize("path", INVALID_MANIFESTS, ids=ids(INVALID_MANIFESTS))
def test_invalid_manifest_names_its_first_violation(path: Path) -> None:
    case = load(path)
    with pytest.raises(ContractError) as caught:
        validate_manifest(case["manifest"], offered_features=SDK_FEATURES)
    assert caught.value.code is Code(case["code"])
    assert caught.value.detail.startswith(case["violation"]), caught.value.detail


def test_first_violation_is_stable_under_field_order() -> None:
    case = load(files("manifests/invalid/first-of-two-violations.json")[0])
    reordered = dict(reversed(list(case["manifest"].items())))
    details = set()
    for manifest in (case["manifest"], reordered):
        with pytest.raises(ContractError) as caught:
            validate_manifest(manifest, offered_features=SDK_FEATURES)
        details.add(caught.value.detail)
    assert len(details) == 1


def test_missing_features_are_all_named() -> None:
    raw = files("manifests/valid/pomodoro.json")[0].read_bytes()
    manifest = validate_manifest(raw, offered_features=SDK_FEATURES)
    offered = SDK_FEATURES - {"app.tools.v1", "app.session-data.v1"}
    verdict = check_sdk_compatibility(manifest, offered_features=offered)
    assert not verdict.compatible
    assert verdict.missing_required == ("app.tools.v1", "app.session-data.v1")
    with pytest.raises(ContractError) as caught:
        validate_manifest(manifest.model_dump(mode="json"), offered_features=offered)
    assert caught.value.code is Code.APP_INCOMPATIBLE
    assert "app.tools.v1, app.session-data.v1" in caught.value.detail


def test_a_missing_optional_feature_is_compatible_but_reported() -> None:
    raw = files("manifests/valid/whiteboard.json")[0].read_bytes()
    manifest = validate_manifest(raw, offered_features=SDK_FEATURES)
    verdict = check_sdk_compatibility(
        manifest, offered_features=SDK_FEATURES - {"artifact.create.v1"}
    )
    assert verdict.compatible
    assert verdict.unavailable_optional == ("artifact.create.v1",)


@pytest.mark.parametrize("path", VALID_TOOLS, ids=ids(VALID_TOOLS))
def test_valid_tool_descriptor_passes(path: Path) -> None:
    tool = validate_tool_descriptor(path.read_bytes())
    assert validate_tool_descriptor(tool.model_dump(mode="json", exclude_none=True)) == tool


@pytest.mark.parametrize("path", INVALID_TOOLS, ids=ids(INVALID_TOOLS))
def test_invalid_tool_descriptor_names_its_first_violation(path: Path) -> None:
    case = load(path)
    with pytest.raises(ContractError) as caught:
        validate_tool_descriptor(case["tool"])
    assert caught.value.code is Code.INVALID_TOOL_DESCRIPTOR
    assert caught.value.detail.startswith(case["violation"]), caught.value.detail


def test_descriptor_defaults_are_the_documented_ones() -> None:
    tool = validate_tool_descriptor(load(files("tools/valid/minimal.json")[0]))
    assert (tool.call_model, tool.timeout_ms, tool.idempotent, tool.risk) == (
        "command", 30_000, False, "medium",
    )  # fmt: skip
    assert tool.activation_requirement == "app_ready"
    assert not tool.requires_foreground
    assert tool.launch_focus == "background"
    foreground = validate_tool_descriptor(load(files("tools/valid/focus-start.json")[0]))
    assert foreground.requires_foreground
    implicit = copy.deepcopy(load(files("tools/valid/focus-start.json")[0]))
    del implicit["launch_policy"]
    assert validate_tool_descriptor(implicit).launch_focus == "foreground"


def _focus_start() -> ToolDescriptor:
    return validate_tool_descriptor(load(files("tools/valid/focus-start.json")[0]))


def test_arguments_are_checked_against_the_input_schema() -> None:
    tool = _focus_start()
    check_tool_arguments(tool, {"minutes": 25})
    for bad, where in (({"minutes": 0}, "arguments at '/minutes'"), ({}, "arguments at ''"),
                       ({"minutes": 25, "x": 1}, "arguments at ''")):  # fmt: skip
        with pytest.raises(ContractError) as caught:
            check_tool_arguments(tool, bad)
        assert caught.value.code is Code.INVALID_ARGUMENTS
        assert caught.value.detail.startswith(where), caught.value.detail


def test_a_result_is_checked_against_the_output_schema() -> None:
    tool = _focus_start()
    check_tool_output(tool, {"completed": True})
    with pytest.raises(ContractError) as caught:
        check_tool_output(tool, {"completed": "yes"})
    assert caught.value.code is Code.HANDLER_FAILED
    assert caught.value.detail.startswith("output at '/completed'")


def _with_patterns(output_schema: dict[str, object]) -> ToolDescriptor:
    raw = copy.deepcopy(load(files("tools/valid/focus-start.json")[0]))
    raw["output_schema"] = output_schema
    return validate_tool_descriptor(raw)


def test_a_schema_built_to_backtrack_costs_no_more_than_any_other() -> None:
    """An app writes its schemas: `^(a+)+$` against 'aaa…!' takes exponential time on a
    backtracking engine, and linear time here."""
    tool = _with_patterns(
        {
            "type": "object",
            "properties": {"x": {"type": "string", "pattern": "^(a+)+$"}},
            "patternProperties": {"^(b+)+$": {"type": "integer"}},
        }
    )
    started = time.monotonic()
    for value in ({"x": "a" * 5000 + "!"}, {"b" * 5000 + "!": "not checked", "x": "a"}):
        try:
            check_tool_output(tool, value)
        except ContractError as exc:
            assert exc.code is Code.HANDLER_FAILED
    with pytest.raises(ContractError) as caught:
        check_tool_output(tool, {"bbb": "not an integer", "x": "a"})
    assert caught.value.detail.startswith("output at '/bbb'")
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("where", [{"pattern": "(?=a)b"}, {"patternProperties": {"(a)\\1": {}}}])
def test_a_pattern_outside_the_portable_subset_makes_the_descriptor_invalid(
    where: dict[str, object],
) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string", **where}}}
    with pytest.raises(ContractError) as caught:
        _with_patterns(schema)
    assert caught.value.code is Code.INVALID_TOOL_DESCRIPTOR
    assert "portable subset" in caught.value.detail
