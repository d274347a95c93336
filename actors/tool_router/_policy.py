"""The user's or organisation's tool policy: `DATA_DIR/tool_policy.json`.

    {"allow": ["pomodoro/*", {"tool": "whiteboard/board.*", "conversation": "conv-*"}],
     "deny":  [{"tool": "pomodoro/pomodoro.stop", "agent": "hermes"}]}

A rule is a glob over `app_scope/method`, or an object with `tool` and optionally `agent`
and `conversation` globs (each `*` when left out). No file allows everything. With an
`allow` list, only the tools it matches are allowed; a `deny` rule that matches hides the
tool whatever `allow` says (deny beats allow). A file that cannot be read or does not
follow this shape hides every tool, naming why: a broken policy never widens access. A
`capabilities` section holds the capability gateway's rules and is not read here.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from contracts import (
    MAX_POLICY_BYTES,
    POLICY_FILE,
    read_policy_json,
    refuse_unknown,
    rule_lists,
)

# The capability gateway's rules live in the same file, in a section of their own.
CAPABILITIES_SECTION: Final = "capabilities"

__all__ = [
    "CAPABILITIES_SECTION",
    "MAX_POLICY_BYTES",
    "POLICY_FILE",
    "Policy",
    "load_policy",
    "parse_policy",
    "policy_stamp",
]


@dataclass(frozen=True)
class Rule:
    tool: str
    agent: str = "*"
    conversation: str = "*"

    def matches(self, tool: str, agent_id: str, conversation_id: str) -> bool:
        return (
            fnmatch.fnmatchcase(tool, self.tool)
            and fnmatch.fnmatchcase(agent_id, self.agent)
            and fnmatch.fnmatchcase(conversation_id, self.conversation)
        )


@dataclass(frozen=True)
class Policy:
    allow: tuple[Rule, ...] | None = None  # None: everything not denied is allowed
    deny: tuple[Rule, ...] = ()
    broken: str | None = None

    def denies(
        self, app_scope: str, method: str, agent_id: str, conversation_id: str
    ) -> str | None:
        """Why the policy hides this tool here, or None when it allows it."""
        if self.broken is not None:
            return f"the tool policy cannot be used: {self.broken}"
        tool = f"{app_scope}/{method}"
        for n, rule in enumerate(self.deny, 1):
            if rule.matches(tool, agent_id, conversation_id):
                return f"denied by tool policy rule deny[{n}] ({rule.tool})"
        if self.allow is not None and not any(
            rule.matches(tool, agent_id, conversation_id) for rule in self.allow
        ):
            return "not in the tool policy's allow list"
        return None


def _rule(raw: Any, where: str) -> Rule:
    if isinstance(raw, str):
        return Rule(raw)
    if isinstance(raw, dict) and isinstance(raw.get("tool"), str):
        refuse_unknown(raw, {"tool", "agent", "conversation"}, where)
        values = {k: raw[k] for k in ("agent", "conversation") if k in raw}
        if not all(isinstance(v, str) for v in values.values()):
            raise ValueError(f"{where}: agent and conversation must be strings")
        return Rule(raw["tool"], **values)
    raise ValueError(f"{where}: a rule is a string or an object with a `tool` glob")


def parse_policy(raw: Any) -> Policy:
    """A `Policy` from the file's JSON value; raises ValueError naming the first problem."""
    if not isinstance(raw, dict):
        raise ValueError("the file must hold a JSON object")  # noqa: TRY004 - a bad file, one error type
    refuse_unknown(raw, {"allow", "deny", CAPABILITIES_SECTION}, "")
    allow, deny = rule_lists(raw, "", _rule)
    return Policy(allow=allow, deny=deny)


def load_policy(data_dir: Path) -> Policy:
    try:
        whole = read_policy_json(data_dir)
        return Policy() if whole is None else parse_policy(whole)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Policy(broken=f"{POLICY_FILE}: {exc}")


def policy_stamp(data_dir: Path) -> tuple[int, int] | None:
    """What changes when the policy file does: its modification time and size."""
    try:
        stat = (data_dir / POLICY_FILE).stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)
