"""The user's edits of the tool policy, through the settings app: the file as it is, and a
new policy that replaces it.

The tool router owns `DATA_DIR/tool_policy.json` (it reads it, and it alone writes it for
the user): a new policy is checked with the very parser the inventory uses (and its
`capabilities` section by the capability gateway, whose rules they are), and one that cannot
be used is refused with `invalid_payload` and a sentence naming the first problem, never
written. A good one replaces the file atomically (a temporary file in the same
directory, fsynced, renamed over it, the directory fsynced), so the watch never reads half a
policy and a crash leaves either the old file or the new one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from contracts import Code, ContractError, replace_file

from ._policy import MAX_POLICY_BYTES, POLICY_FILE, Policy, load_policy, parse_policy

# What `policy_view`'s inventories may take, as JSON: with the policy itself (at most
# MAX_POLICY_BYTES) the answer stays well under a kernel frame, however many conversations.
INVENTORIES_BUDGET: Final = 256 * 1024
_SHOWN: Final = ("conversation_id", "agent_id", "revision", "visibility")


def checked_policy(raw: Any) -> tuple[Policy, bytes]:
    """The policy and the file's bytes for `raw`; `ContractError` when it cannot be used."""
    try:
        policy = parse_policy(raw)
        text = json.dumps(raw, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as exc:
        raise ContractError(Code.INVALID_PAYLOAD, f"the policy cannot be used: {exc}") from None
    data = text.encode()
    if len(data) > MAX_POLICY_BYTES:
        raise ContractError(
            Code.TOO_LARGE, f"the policy takes {len(data)} bytes; at most {MAX_POLICY_BYTES}"
        )
    return policy, data


def write_policy(data_dir: Path, data: bytes) -> None:
    """Replace the policy file with `data`, whole or not at all."""
    replace_file(data_dir / POLICY_FILE, data)


def policy_view(data_dir: Path) -> dict[str, Any]:
    """The policy file as the tool router sees it: `exists`, `policy` (its JSON value, or
    null), `text` (its content when it is not JSON), `broken` (why it cannot be used, or
    null: a broken file hides every tool)."""
    path = data_dir / POLICY_FILE
    if not path.exists():
        return {"exists": False, "policy": None, "text": None, "broken": None}
    broken = load_policy(data_dir).broken
    try:
        text = path.read_bytes()[:MAX_POLICY_BYTES].decode("utf-8", errors="replace")
    except OSError as exc:
        return {"exists": True, "policy": None, "text": None, "broken": broken or str(exc)}
    try:
        return {"exists": True, "policy": json.loads(text), "text": None, "broken": broken}
    except ValueError:
        return {"exists": True, "policy": None, "text": text, "broken": broken}


def inventories_view(inventories: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Per conversation, the revision published and every installed tool's visibility with
    its reason: the most recently published first within `INVENTORIES_BUDGET`, then sorted
    by conversation; `inventories_left_off` counts the conversations past it."""
    rows = sorted(inventories, key=lambda row: int(row.get("published_ms") or 0), reverse=True)
    shown: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        entry = {key: row.get(key) for key in _SHOWN}
        size += len(json.dumps(entry, default=str))
        if shown and size > INVENTORIES_BUDGET:
            break
        shown.append(entry)
    shown.sort(key=lambda entry: str(entry["conversation_id"]))
    return {"inventories": shown, "inventories_left_off": len(rows) - len(shown)}
