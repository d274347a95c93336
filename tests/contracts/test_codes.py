"""The code vocabulary: stable, complete for the filter chain, capability requests and tool
calls, and unambiguous."""

from __future__ import annotations

import pickle
import re

from contracts import (
    APP_TOOL_ERROR_CODES,
    CAPABILITY_FAILURE_CODES,
    TOOL_ERROR_CODES,
    CapabilityResult,
    Code,
    ContractError,
)

SEED_TOOL_ERRORS = [
    "cancelled_by_user",
    "permission_denied",
    "app_disabled",
    "app_not_installed",
    "app_version_mismatch",
    "tool_not_visible",
    "invalid_arguments",
    "foreground_required",
    "operation_expired",
    "handler_failed",
]
SEED_CAPABILITY_RESULTS = [
    "completed",
    "cancelled_by_user",
    "permission_denied",
    "unsupported_on_host",
    "policy_denied",
    "expired",
    "failed",
]
# An effect that cannot be repeated, started and never recorded as ended before a crash.
IN_DOUBT = "in_doubt"


def test_codes_are_unique_snake_case_strings() -> None:
    values = [code.value for code in Code]
    assert len(values) == len(set(values))
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", value) for value in values)


def test_tool_errors_are_exactly_those_of_the_seed() -> None:
    assert {code.value for code in TOOL_ERROR_CODES} == set(SEED_TOOL_ERRORS)
    assert APP_TOOL_ERROR_CODES < TOOL_ERROR_CODES


def test_capability_results_are_those_of_the_seed_and_in_doubt() -> None:
    assert [result.value for result in CapabilityResult] == [*SEED_CAPABILITY_RESULTS, IN_DOUBT]
    # `completed` is a result, never an error code; every other result is one.
    assert "completed" not in {code.value for code in Code}
    assert {code.value for code in CAPABILITY_FAILURE_CODES} == {
        *SEED_CAPABILITY_RESULTS[1:],
        IN_DOUBT,
    }


def test_contract_error_carries_code_and_detail_and_pickles() -> None:
    error = ContractError(Code.SCOPE_MISMATCH, "target.app_scope: differs")
    assert error.to_dict() == {"code": "scope_mismatch", "detail": "target.app_scope: differs"}
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.code, clone.detail) == (error.code, error.detail)
