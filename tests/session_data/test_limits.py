"""The store's check of an app's session data, on its own: what it keeps (compact JSON) and
the code it refuses each kind of bad data with, under the default quotas and tighter ones
from the store's config."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from actors.store import SessionDataLimits
from actors.store._session_data import check_data
from contracts import Code, ContractError


def _refused(data: Any, limits: SessionDataLimits) -> tuple[Code, str]:
    with pytest.raises(ContractError) as caught:
        check_data(data, limits)
    return caught.value.code, caught.value.detail


def _nested(depth: int) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for _ in range(depth - 1):
        data = {"d": data}
    return data


def test_what_is_kept_is_compact_json() -> None:
    limits = SessionDataLimits()
    assert check_data({}, limits) == "{}"
    kept = check_data({"title": "été", "n": [1, 2.5, None, True]}, limits)
    assert kept == '{"title":"été","n":[1,2.5,null,true]}'


@pytest.mark.parametrize(
    ("data", "code", "where"),
    [
        (None, Code.INVALID_PAYLOAD, "data"),
        ([1], Code.INVALID_PAYLOAD, "data"),
        ({"x": float("inf")}, Code.INVALID_PAYLOAD, "data.x"),
        ({"x": [b"\x00"]}, Code.INVALID_PAYLOAD, "data.x[0]"),
        ({"x": {1: "one"}}, Code.INVALID_PAYLOAD, "data.x"),
        (_nested(17), Code.TOO_DEEP, "data.d"),
        ({"x": "y" * (128 * 1024)}, Code.TOO_LARGE, "bytes of JSON"),
        ({f"k{n}": 0 for n in range(4097)}, Code.TOO_LARGE, "keys"),
    ],
)
def test_the_default_quotas_refuse_with_their_codes(data: Any, code: Code, where: str) -> None:
    refused_code, detail = _refused(data, SessionDataLimits())
    assert refused_code is code
    assert where in detail


def test_the_quotas_come_from_the_stores_config() -> None:
    limits = SessionDataLimits(max_bytes=20, max_depth=2, max_keys=3)
    assert check_data({"a": {"b": 1}}, limits) == '{"a":{"b":1}}'
    assert _refused({"a": {"b": {}}}, limits)[0] is Code.TOO_DEEP
    assert _refused({"a": 1, "b": 2, "c": {"d": 3}}, limits)[0] is Code.TOO_LARGE
    assert _refused({"a": "x" * 20}, limits)[0] is Code.TOO_LARGE
    with pytest.raises(ValidationError):
        SessionDataLimits(max_bytes=1)
    with pytest.raises(ValidationError):
        SessionDataLimits.model_validate({"max_values": 10})
