"""The policy file, `DATA_DIR/tool_policy.json`, as its two readers take it apart.

The tool router reads its top-level `allow` / `deny` tool rules, the capability gateway its
`capabilities` section of the same shape. Both share the file's bounds and the lists'
grammar: each list holds rules, and the first problem found is named with where it is, so
a broken policy can be refused (never widened) with a reason a person can act on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

POLICY_FILE: Final = "tool_policy.json"
MAX_POLICY_BYTES: Final = 256 * 1024

R = TypeVar("R")


def read_policy_json(data_dir: Path) -> Any:
    """The file's JSON value, or None when there is no file. Raises `ValueError` for a file
    too large or not JSON, `OSError` / `UnicodeDecodeError` for one that cannot be read."""
    path = data_dir / POLICY_FILE
    if not path.exists():
        return None
    if path.stat().st_size > MAX_POLICY_BYTES:
        raise ValueError(f"the file is larger than {MAX_POLICY_BYTES} bytes")
    return json.loads(path.read_text(encoding="utf-8"))


def refuse_unknown(raw: dict[str, Any], known: set[str], where: str) -> None:
    """Raise `ValueError` naming the first field of `raw` outside `known`."""
    extra = set(raw) - known
    if extra:
        prefix = f"{where}: " if where else ""
        raise ValueError(f"{prefix}unknown field {sorted(extra)[0]!r}")


def rule_lists(
    raw: dict[str, Any], where: str, rule: Callable[[Any, str], R]
) -> tuple[tuple[R, ...] | None, tuple[R, ...]]:
    """The `allow` list (None when absent: everything not denied is allowed) and the `deny`
    list of `raw`, each item made by `rule(item, where_it_is)`."""
    lists: dict[str, tuple[R, ...]] = {}
    for key in ("allow", "deny"):
        if key in raw:
            named = f"{where}.{key}" if where else key
            if not isinstance(raw[key], list):
                raise ValueError(f"{named}: must be a list of rules")
            lists[key] = tuple(rule(item, f"{named}[{n}]") for n, item in enumerate(raw[key], 1))
    return lists.get("allow"), lists.get("deny", ())
