"""A tool's schemas cost a bounded time to check: those that cannot be are refused when
the descriptor is accepted, the regular expressions run on RE2 wherever a schema is
evaluated, and a check that spends its budget ends with the call's code in bounded time."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from contracts import (
    Code,
    ContractError,
    ToolDescriptor,
    check_tool_arguments,
    check_tool_output,
    validate_tool_descriptor,
)
from contracts._schema_check import CHECK_BUDGET, MAX_EXPANDED
from tests.contracts._data import files, load


def _tool(input_schema: dict[str, Any], output_schema: dict[str, Any] | None = None) -> Any:
    raw = copy.deepcopy(load(files("tools/valid/focus-start.json")[0]))
    raw["input_schema"] = input_schema
    raw["output_schema"] = output_schema or {"type": "object"}
    return raw


def _refused(schema: dict[str, Any]) -> str:
    with pytest.raises(ContractError) as caught:
        validate_tool_descriptor(_tool(schema))
    assert caught.value.code is Code.INVALID_TOOL_DESCRIPTOR
    return caught.value.detail


def _laughs(levels: int) -> dict[str, Any]:
    """Each definition refers to the one below it ten times: 10**levels subschemas."""
    defs: dict[str, Any] = {"d0": {"type": "string"}}
    for n in range(1, levels + 1):
        defs[f"d{n}"] = {"allOf": [{"$ref": f"#/$defs/d{n - 1}"} for _ in range(10)]}
    return {"type": "object", "$defs": defs, "properties": {"x": {"$ref": f"#/$defs/d{levels}"}}}


def _chain(links: int) -> dict[str, Any]:
    """Each definition nests the next one inside it, by reference."""
    defs = {f"d{n}": {"properties": {"a": {"$ref": f"#/$defs/d{n + 1}"}}} for n in range(links)}
    defs[f"d{links}"] = {"type": "string"}
    return {"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/d0"}}}


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        (_laughs(6), f"expands to over {MAX_EXPANDED} subschemas"),
        (
            {"type": "object", "properties": {"x": {"$ref": "#"}}},
            "leads back to itself",
        ),
        (
            {"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}},
            "leads back to itself",
        ),
        ({"type": "object", "properties": {"x": {"$ref": "#/$defs/none"}}}, "refers to nothing"),
        (_chain(40), "nests over 64 levels with its $refs followed"),
        ({"type": "object", "enum": [{"k": "x" * 70_000}]}, "over 65536 bytes"),
        ({"type": "object", "unevaluatedProperties": False}, "not bounded in time"),
        ({"type": "object", "$defs": {"a": {"$dynamicAnchor": "a"}}}, "not bounded in time"),
        ({"type": "object", "properties": {"x": {"$id": "urn:x"}}}, "only the root"),
        (
            {"type": "object", "properties": {"x": {"pattern": ".{1000}.{1000}"}}},
            "over 10000 RE2 instructions",
        ),
    ],
    ids=[
        "billion-refs",
        "self-ref",
        "ref-cycle",
        "dangling-ref",
        "deep",
        "big",
        "unevaluated",
        "dynamic",
        "nested-id",
        "huge-pattern",
    ],
)
def test_a_schema_that_cannot_be_checked_in_bounded_time_is_refused(
    schema: dict[str, Any], why: str
) -> None:
    assert why in _refused(schema)


def test_a_schema_with_shared_references_within_the_limits_is_taken() -> None:
    tool = validate_tool_descriptor(_tool(_laughs(3)))  # 1,000 subschemas, followed
    check_tool_arguments(tool, {"x": "a"})
    with pytest.raises(ContractError) as caught:
        check_tool_arguments(tool, {"x": 1})
    assert caught.value.detail.startswith("arguments at '/x'")


def test_patterns_are_compiled_by_re2_alone() -> None:
    """`\\pL` is RE2's (Python's `re` refuses it): the metaschema's format check no longer
    compiles patterns with Python's engine, which is not the one that runs them."""
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^\\pL+$"}}}
    tool = validate_tool_descriptor(_tool(schema))
    check_tool_arguments(tool, {"x": "héllo"})
    with pytest.raises(ContractError):
        check_tool_arguments(tool, {"x": "h3llo"})


def test_additional_properties_beside_pattern_properties_run_on_re2() -> None:
    """jsonschema's own `additionalProperties` matches the `patternProperties` beside it
    with Python's backtracking `re`: `^(a+)+$` against 'aaa…!' would take hours."""
    tool = validate_tool_descriptor(
        _tool(
            {"type": "object", "patternProperties": {"^(a+)+$": {}}, "additionalProperties": False}
        )
    )
    started = time.monotonic()
    with pytest.raises(ContractError) as caught:
        check_tool_arguments(tool, {"a" * 5_000 + "!": 1})
    assert "additional properties are not allowed" in caught.value.detail
    check_tool_arguments(tool, {"a" * 5_000: 1})
    # Milliseconds on RE2; a backtracking engine would not end (2**5000 ways to split).
    assert time.monotonic() - started < 10.0


def test_unique_items_take_linear_time() -> None:
    """Objects do not sort: jsonschema's own check compares every pair of them."""
    schema = {"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": True}}}
    tool = validate_tool_descriptor(_tool(schema))
    items = [{"n": n, "s": [n, str(n)]} for n in range(20_000)]
    started = time.monotonic()
    check_tool_arguments(tool, {"xs": items})
    with pytest.raises(ContractError) as caught:
        check_tool_arguments(tool, {"xs": [*items, {"s": [7, "7"], "n": 7.0}]})
    assert "non-unique" in caught.value.detail
    check_tool_arguments(tool, {"xs": [1, True, "1", [1], {"1": 1}]})  # JSON's equality
    # ≈0.3 s on a quiet machine; comparing every pair would be 2·10^8 comparisons (minutes).
    assert time.monotonic() - started < 20.0


def _costly_tool() -> ToolDescriptor:
    """Within every static limit, yet a large value costs it ≈ a hundred keywords an item."""
    checks = [{"type": "object", "required": ["k"], "minProperties": 1} for _ in range(30)]
    item = {"allOf": checks}
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": item}}}
    return validate_tool_descriptor(_tool(schema, schema))


@pytest.mark.parametrize(
    ("check", "code"),
    [(check_tool_arguments, Code.INVALID_ARGUMENTS), (check_tool_output, Code.HANDLER_FAILED)],
)
def test_a_check_past_its_budget_ends_with_the_calls_code_in_bounded_time(
    check: Any, code: Code
) -> None:
    tool = _costly_tool()
    check(tool, {"xs": [{"k": 1}] * 10})  # a small value is checked in full
    started = time.monotonic()
    with pytest.raises(ContractError) as caught:
        check(tool, {"xs": [{"k": 1}] * 200_000})  # ≈ 6 million keywords, unbudgeted
    spent = time.monotonic() - started
    assert caught.value.code is code
    assert "cost more than the runtime spends" in caught.value.detail
    # The whole budget is ≈0.1 s; 3 s leaves room for a loaded 2-core machine, and the
    # value unbudgeted takes over ten on a quiet one.
    assert spent < 3.0, f"{spent:.2f} s for a budget of {CHECK_BUDGET} units"


def test_a_pattern_is_charged_for_its_text_before_it_runs() -> None:
    """RE2 is linear in the text, times its program: a program of ≈900 instructions on a
    quarter-megabyte string takes RE2 about a second, so it is refused before it runs."""
    pattern = "(x|[ab]*a[ab]{900})+c"
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}}
    tool = validate_tool_descriptor(_tool(schema))
    started = time.monotonic()
    with pytest.raises(ContractError) as caught:
        check_tool_arguments(tool, {"x": "ab" * 125_000})
    assert "cost more than the runtime spends" in caught.value.detail
    assert time.monotonic() - started < 0.5  # running it would take ≈1 s on a quiet machine
    with pytest.raises(ContractError) as caught:
        check_tool_arguments(tool, {"x": "ab" * 100})
    assert "does not match the pattern" in caught.value.detail
