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
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

POLICY_FILE: Final = "tool_policy.json"
SECTION: Final = "capabilities"
MAX_POLICY_BYTES: Final = 256 * 1024


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
        extra = set(raw) - {"capability", "app"}
        if extra:
            raise ValueError(f"{where}: unknown field {sorted(extra)[0]!r}")
        app = raw.get("app", "*")
        if not isinstance(app, str):
            raise ValueError(f"{where}: app must be a string")  # noqa: TRY004 - one error type
        return Rule(raw["capability"], app)
    raise ValueError(f"{where}: a rule is a string or an object with a `capability` glob")


def parse_section(raw: Any) -> Policy:
    """A `Policy` from the section's JSON value; raises ValueError naming the first problem."""
    if not isinstance(raw, dict):
        raise ValueError(f"{SECTION}: must be a JSON object")  # noqa: TRY004 - one error type
    extra = set(raw) - {"allow", "deny"}
    if extra:
        raise ValueError(f"{SECTION}: unknown field {sorted(extra)[0]!r}")
    lists = {}
    for key in ("allow", "deny"):
        if key in raw:
            if not isinstance(raw[key], list):
                raise ValueError(f"{SECTION}.{key}: must be a list of rules")
            lists[key] = tuple(_rule(r, f"{SECTION}.{key}[{n}]") for n, r in enumerate(raw[key], 1))
    return Policy(allow=lists.get("allow"), deny=lists.get("deny", ()))


def load_policy(data_dir: Path) -> Policy:
    path = data_dir / POLICY_FILE
    try:
        if not path.exists():
            return Policy()
        if path.stat().st_size > MAX_POLICY_BYTES:
            return Policy(broken=f"{POLICY_FILE} is larger than {MAX_POLICY_BYTES} bytes")
        whole = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(whole, dict):
            return Policy(broken=f"{POLICY_FILE}: the file must hold a JSON object")
        return parse_section(whole[SECTION]) if SECTION in whole else Policy()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Policy(broken=f"{POLICY_FILE}: {exc}")
