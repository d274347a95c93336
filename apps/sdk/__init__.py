"""The Runtime SDK: the only door between an app and the runtime.

An app is a process: a subclass of `RuntimeApp` run by the supervisor as `app.<scope>`.
It reads and acts only through `self.sdk` (`app`, `state`, `agent_messages`, `actions`,
`navigation`, `lifecycle`, `apps`, `tools`, `session_data`, `artifacts`, `capabilities`,
`interaction`); it never sees the AppServer, the agent, the token, another app or the
runtime's files.

- `_runtime_app`: `RuntimeApp` and the SDK object;
- `_declare`: the manifest declared in the app's code (`@declare_app`, `@tool`);
- `_tools`: the agent's tool calls, each recorded, run by its handler and reported once;
- `_log`: the app's local event log (its App Inbox mirror, its actions, its tool calls);
- `_view`: the view model folded from that log (timeline, tasks, pending interactions);
- `_session_data`: one JSON object per instance, kept by the runtime with a revision;
- `_artifacts`: bytes with a media type and a title, kept by the runtime, handed to the
  agent as a reference.
- `_capabilities`: system effects asked of the capability gateway, with the user's consent.
- `_interaction`: the Interaction App's own facts of a conversation: its mode, the speech
  made of an agent message.
- `_surface`: the app's side of its surface (its UI in the web host's sandboxed frame):
  the surface's events, session data and capability requests, relayed by the web host,
  and the app's state patches to it.

Kernel messages an app process answers: `app.deliver` {`messages`: [projection]} from the
store, `app.action.state` {`id`, `state`, `seq`? `code`?} from the router, `app.lifecycle`
from the app manager, `app.input` {...} from the host actor only (the user's side; any
other sender's is refused and counted), `app.tool.invoke` {`call_id`, `method`,
`arguments`, `app_scope`, `conversation_id`, `instance_id`}, `app.tool.cancel`
{`call_id`} and `app.tool.deadline` (a deadline operation started or ended) from the tool
router only, `app.session_data.changed` {`instance_id`, `data`, `revision`} from the store
only, `app.capability.consent` (a consent card opened or closed) from the capability gateway
only, `app.surface.request` (what its surface asks, checked) from the web host only. It
sends `router.action`, `app_manager.request`, `tool_router.report`,
`tool_router.deadline`, `store.session_data.get` / `.replace`, `store.artifacts.create` /
`.read` / `.list`, `capability_gateway.request` (and the chat app
`capability_gateway.consent`) and `web_host.surface.push` (to its own instances'
surfaces), and nothing else reaches past the supervisor (`door` lists what it takes, from
whom).
"""

from typing import TYPE_CHECKING

from actors.kernel import lazy_exports

# Each name is imported from its module on first use: a reader of an app's log (`read_view`,
# the chat's history on the command line) needs neither the kernel nor the contracts.
_LAZY: dict[str, str] = {
    "CallFailed": "actors.kernel",
    "AppDeclaration": "._declare",
    "declare_app": "._declare",
    "declared_app": "._declare",
    "manifest_of": "._declare",
    "tool": "._declare",
    "EventLog": "._log",
    "has_events_table": "._log",
    "HOOKS": "._navigation",
    "SDK": "._runtime_app",
    "AppContext": "._runtime_app",
    "RuntimeApp": "._runtime_app",
    "ToolDeclaration": "._tool_table",
    "declared_tools": "._tool_table",
    "tool_handlers": "._tool_table",
    "PENDING": "._tools",
    "ToolCall": "._tools",
    "ASKS": "._view",
    "ConversationView": "._view",
    "ViewModel": "._view",
    "read_view": "._read",
}

if TYPE_CHECKING:
    from actors.kernel import CallFailed

    from ._declare import AppDeclaration, declare_app, declared_app, manifest_of, tool
    from ._log import EventLog, has_events_table
    from ._navigation import HOOKS
    from ._read import read_view
    from ._runtime_app import SDK, AppContext, RuntimeApp
    from ._tool_table import ToolDeclaration, declared_tools, tool_handlers
    from ._tools import PENDING, ToolCall
    from ._view import ASKS, ConversationView, ViewModel


__getattr__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "ASKS",
    "HOOKS",
    "PENDING",
    "SDK",
    "AppContext",
    "AppDeclaration",
    "CallFailed",
    "ConversationView",
    "EventLog",
    "RuntimeApp",
    "ToolCall",
    "ToolDeclaration",
    "ViewModel",
    "declare_app",
    "declared_app",
    "declared_tools",
    "has_events_table",
    "manifest_of",
    "read_view",
    "tool",
    "tool_handlers",
]
