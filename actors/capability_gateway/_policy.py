"""The user's or organisation's capability policy: the `capabilities` section of
`DATA_DIR/tool_policy.json`, beside the tool rules (which the tool router reads).

    {"allow": [...tool rules...],
     "capabilities": {"allow": ["*/file.save", {"capability": "notification.*", "app": "pomodoro"}],
                      "deny":  ["hostile/*"]}}

A rule is a glob over `app_scope/capability`, or an object with a `capability` glob and
optionally an `app` glob (`*` when left out). No file, or no section, allows every
capability. With an `allow` list, only what it matches is allowed; a `deny` rule that
matches refuses whatever `allow` says (deny beats allow). A file that cannot be read or
parsed, or a section that does not follow this shape, refuses every capability, naming why:
a broken policy never widens access.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from contracts import POLICY_FILE, read_policy_json, refuse_unknown, rule_lists

SECTION: Final = "capabilities"


@dataclass(frozen=True)
class Rule:
    capability: str
    app: str = "*"

    def matches(self, app_scope: str, capability: str) -> bool:
        return fnmatch.fnmatchcase(app_scope, self.app) and fnmatch.fnmatchcase(
            capability, self.capability
        )


@dataclass(frozen=True)
class Policy:
    allow: tuple[Rule, ...] | None = None  # None: everything not denied is allowed
    deny: tuple[Rule, ...] = ()
    broken: str | None = None

    def refuses(self, app_scope: str, capability: str) -> str | None:
        """Why the policy refuses this capability to this app, or None when it allows it."""
        if self.broken is not None:
            return f"the capability policy cannot be used: {self.broken}"
        for n, rule in enumerate(self.deny, 1):
            if rule.matches(app_scope, capability):
                return f"denied by capability policy rule deny[{n}]"
        if self.allow is not None and not any(r.matches(app_scope, capability) for r in self.allow):
            return "not in the capability policy's allow list"
        return None


def _rule(raw: Any, where: str) -> Rule:
    if isinstance(raw, str):
        app, slash, capability = raw.partition("/")
        if not slash:
            raise ValueError(f"{where}: a glob over app_scope/capability is needed")
        return Rule(capability, app)
    if isinstance(raw, dict) and isinstance(raw.get("capability"), str):
        refuse_unknown(raw, {"capability", "app"}, where)
        app = raw.get("app", "*")
        if not isinstance(app, str):
            raise ValueError(f"{where}: app must be a string")  # noqa: TRY004 - one error type
        return Rule(raw["capability"], app)
    raise ValueError(f"{where}: a rule is a string or an object with a `capability` glob")


def parse_section(raw: Any) -> Policy:
    """A `Policy` from the section's JSON value; raises ValueError naming the first problem."""
    if not isinstance(raw, dict):
        raise ValueError(f"{SECTION}: must be a JSON object")  # noqa: TRY004 - one error type
    refuse_unknown(raw, {"allow", "deny"}, SECTION)
    allow, deny = rule_lists(raw, SECTION, _rule)
    return Policy(allow=allow, deny=deny)


def load_policy(data_dir: Path) -> Policy:
    try:
        whole = read_policy_json(data_dir)
        if whole is None:
            return Policy()
        if not isinstance(whole, dict):
            return Policy(broken=f"{POLICY_FILE}: the file must hold a JSON object")
        return parse_section(whole[SECTION]) if SECTION in whole else Policy()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Policy(broken=f"{POLICY_FILE}: {exc}")
