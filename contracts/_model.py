"""The base of every contract model, and the translation of pydantic errors into one line.

All contract models are strict (no coercion: `"1"` is not `1`, `true` is not `1`), closed
(an unknown field is a violation, not something silently dropped) and frozen (a validated
message cannot be edited after the check). Cross-field rules raise `rule(...)` so that the
reported violation carries the path of the field that broke it, not just the model's.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, JsonValue, StringConstraints, ValidationError
from pydantic_core import PydanticCustomError

JsonObject = dict[str, JsonValue]
# Short human-readable labels and the longer texts shown to people or agents.
Label = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Text = Annotated[str, StringConstraints(max_length=4096)]

_RULE = "contract_rule"


class ContractModel(BaseModel):
    """Strict, closed, frozen: the shape every contract type shares."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def rule(path: str, message: str) -> PydanticCustomError:
    """A cross-field violation at `path` (relative to the model that checks it)."""
    return PydanticCustomError(_RULE, "{path}: {message}", {"path": path, "message": message})


def format_loc(loc: tuple[int | str, ...] | list[Any]) -> str:
    """`('tools', 0, 'method')` → `tools[0].method`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def first_violation(exc: ValidationError, *, prefix: str = "") -> str:
    """The first error pydantic found, as `path: message`.

    Pydantic validates fields in declaration order, then model rules, so "first" is stable:
    the same bad input always names the same violation.
    """
    error = exc.errors(include_url=False)[0]
    parts = [prefix, format_loc(error["loc"])]
    if error["type"] == _RULE:
        ctx = error.get("ctx") or {}
        parts.append(str(ctx.get("path", "")))
        message = str(ctx.get("message", error["msg"]))
    else:
        message = error["msg"].removeprefix("Value error, ")
    loc = ".".join(part for part in parts if part).replace(".[", "[")
    return f"{loc}: {message}" if loc else message
