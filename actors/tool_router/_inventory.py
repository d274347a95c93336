"""Which tools an agent may call in a conversation, and why each other one may not.

A tool is visible when all of these hold, checked in this order (the first that fails is
the reason given for it):

1. its app is installed and enabled;
2. this runtime serves every SDK feature the app requires, and `app.tools.v1`;
3. this runtime serves how the tool is handled and delivered (through the app's SDK:
   `direct`, the handler's answer, or `runtime_operation`, a deadline operation the
   handler hands to the runtime; `miniapp_sdk`, run in the app's process, or
   `surface_bridge`, handed by the app's SDK to its surface in front, which answers it);
4. the host offers every capability the tool may request;
5. the policy allows it for this agent and conversation (deny beats allow);
6. its preconditions hold: a tool whose app may not be launched for it (`launch: never`)
   is visible only while the app has a live instance in this conversation.

The inventory lists the visible tools in a fixed order (by app, then method), so the same
state always gives the same content and the same hash; a new revision is issued only when
that hash changes.

The first rule that fails is the reason kept for a tool (`lineup tools inventory`). The
host's capabilities are `host_capabilities` in the tool router's config (none yet). The
policy (`_policy`) is re-read as soon as a change to it is written and closed
(`_policy_watch`). A conversation gets a new revision only when its hash changes and when
it is first associated with an agent; revisions come from one counter that is stored with
each publication and never goes down. Each revision is a `lineup.inventory` envelope
submitted like the calls' receipts, so the agent sees it in order with the tool router's
other envelopes.

Beside the conversations', the runtime keeps the `runtime:global` inventory (no agent, no
conversation: what any agent may use in a conversation that has not begun), published on
every change like the others. An agent therefore holds the current tools before the first
message of a new conversation (a user's first line reaches the agent before the runtime
hears of the conversation); when that conversation is first associated and its tools are
the global ones, it takes the global revision instead of a new one, so a call the agent
made from the global inventory is current. The agent keeps the global inventory only for
conversations it holds none of their own for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from contracts import RUNTIME_SDK_FEATURES, ToolDescriptor

from ._policy import Policy

TOOLS_FEATURE: Final = "app.tools.v1"
SERVED_HANDLING: Final = frozenset({"direct", "runtime_operation"})
SERVED_DELIVERY: Final = frozenset({"miniapp_sdk", "surface_bridge"})
COMPONENTS: Final = ("text", "markdown", "status", "task", "choice", "confirm", "input")


@dataclass(frozen=True)
class AppView:
    """What the tool router knows of one app: its record and its live instances."""

    app_scope: str
    version: str
    enabled: bool
    installed: bool
    manifest: Mapping[str, Any]
    # instance id → (conversation id, mode), for the live ones.
    instances: Mapping[str, tuple[str | None, str]] = field(default_factory=dict)

    def tools(self) -> list[ToolDescriptor]:
        return [ToolDescriptor.model_validate(t) for t in self.manifest.get("tools", [])]

    def live_in(self, conversation_id: str) -> list[str]:
        return [i for i, (conv, _) in self.instances.items() if conv == conversation_id]


@dataclass(frozen=True)
class Visibility:
    app_scope: str
    method: str
    contract_version: str
    visible: bool
    reason: str

    def to_row(self) -> dict[str, Any]:
        return {
            "app_scope": self.app_scope,
            "method": self.method,
            "contract_version": self.contract_version,
            "visible": self.visible,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Computed:
    """One conversation's inventory, before it has a revision."""

    tools: list[dict[str, Any]]
    apps: list[dict[str, Any]]
    visibility: list[Visibility]
    hash: str

    def payload(self, revision: int) -> dict[str, Any]:
        return {
            "revision": str(revision),
            "tools": self.tools,
            "apps": self.apps,
            "components": list(COMPONENTS),
            "capabilities": [],
        }


def _why_hidden(  # noqa: PLR0917 - the six facts a tool's visibility depends on
    app: AppView,
    tool: ToolDescriptor,
    agent_id: str,
    conversation_id: str,
    policy: Policy,
    host_capabilities: frozenset[str],
) -> str | None:
    if not app.installed:
        return "the app is not installed"
    if not app.enabled:
        return "the app is disabled"
    sdk = app.manifest.get("runtime_sdk", {})
    features = [TOOLS_FEATURE, *sdk.get("required_features", [])]
    missing = sorted({f for f in features if f not in RUNTIME_SDK_FEATURES})
    if missing:
        return f"needs {', '.join(missing)}, which this runtime does not serve"
    if tool.handling not in SERVED_HANDLING or tool.delivery not in SERVED_DELIVERY:
        return f"handling {tool.handling} / delivery {tool.delivery} is not served yet"
    lacking = sorted(set(tool.capabilities) - host_capabilities)
    if lacking:
        return f"needs {', '.join(lacking)}, which the host does not offer"
    denied = policy.denies(app.app_scope, tool.method, agent_id, conversation_id)
    if denied is not None:
        return denied
    if tool.launch_policy.launch == "never" and not app.live_in(conversation_id):
        return "its app may not be launched for it and has no instance here"
    return None


def compute(
    apps: Mapping[str, AppView],
    agent_id: str,
    conversation_id: str,
    policy: Policy,
    host_capabilities: frozenset[str] = frozenset(),
) -> Computed:
    tools: list[dict[str, Any]] = []
    listed: dict[str, dict[str, Any]] = {}
    visibility: list[Visibility] = []
    for scope in sorted(apps):
        app = apps[scope]
        for tool in sorted(app.tools(), key=lambda t: t.method):
            why = _why_hidden(app, tool, agent_id, conversation_id, policy, host_capabilities)
            visibility.append(
                Visibility(scope, tool.method, tool.contract_version, why is None, why or "visible")
            )
            if why is not None:
                continue
            tools.append({**tool.model_dump(mode="json", exclude_none=True), "app_scope": scope})
            if scope not in listed:
                listed[scope] = {"app_scope": scope, "version": app.version}
                title = app.manifest.get("title")
                if title:
                    listed[scope]["title"] = title
                entrypoints = [e["id"] for e in app.manifest.get("entrypoints", [])]
                listed[scope]["entrypoints"] = entrypoints
    apps_listed = list(listed.values())
    canonical = json.dumps(
        {"tools": tools, "apps": apps_listed}, sort_keys=True, separators=(",", ":")
    )
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return Computed(tools, apps_listed, visibility, digest)


def find_tool(inventory: Mapping[str, Any], app_scope: str, method: str) -> dict[str, Any] | None:
    """The tool entry of a published inventory payload, or None."""
    for entry in inventory.get("tools", []):
        if entry["app_scope"] == app_scope and entry["method"] == method:
            return dict(entry)
    return None
