"""The Runtime SDK: the only door between an app and the runtime.

An app is a process: a subclass of `RuntimeApp` run by the supervisor as `app.<scope>`.
It reads and acts only through `self.sdk` (`app`, `state`, `agent_messages`, `actions`,
`navigation`, `lifecycle`, `apps`, `tools`, `session_data`, `artifacts`, `capabilities`,
`interaction`); it never sees the AppServer, the agent, the token, another app or the
runtime's files.

- `_runtime_app`: `RuntimeApp` and the SDK object;
- `_app_core`: what the SDK's parts see of the app and of each other (faces), and the
  app's `AppContext`;
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

What an app process takes, from whom and in what shape is the SDK's `door` (docs/messages.md,
"each app process"): its deliveries from the router, the verdicts on its actions, its
lifecycle from the app manager, the user's input from the host alone, its tool calls from
the tool router alone, its session data's changes from the store, consent cards from the
capability gateway, and its surface's requests from the web host; anything else is refused
and counted. It sends `router.action`, `app_manager.request`, `tool_router.report`,
`tool_router.deadline`, `store.session_data.get` / `.replace`, `store.artifacts.create` /
`.read` / `.list`, `capability_gateway.request` (and the chat app
`capability_gateway.consent`) and `web_host.surface.push` (to its own instances'
surfaces), and nothing else reaches past the supervisor.

**An app's inbox, kept twice.** An app process's kernel mailbox is its App Inbox:
`mailbox.db` holds each `app.deliver` until the app has applied it, which is what survives
a crash of the app (or its absence: messages wait there until it starts) and is replayed
in order. The app's `app.db` (`_log`) holds every message it received, once, keyed by
message id, with its acknowledgement: the app's own memory, what its view model is folded
from, what decides whether a subscriber sees a message again, and what `lineup chat
history` reads. An acknowledgement is the app's alone and stays in `app.db`; `runtime.db`
keeps the agent's messages as conversation history, not per-app inbox rows. Subscribers
are called for every message not yet acknowledged (at least once). Display messages and
withdrawals are acknowledged after the subscribers ran; interaction requests when the user
answered, or when the agent withdrew them. Apps receive projections (id, type,
conversation, sender, payload, seq), never the raw envelope, and get only their private
directory in their config.

**User actions** are declarative (`send_text`, `answer`): the SDK mints the envelope id and
writes the pending local echo, and the router builds and validates the envelope and
queues it in the outbox. The transport submits pending items in local order with the
envelope id as key; the verdict settles the item once and flips the echo to `accepted` or
`rejected`.

**Questions the conversation walked past.** The agent withdraws a question it asked with
`lineup.interaction.withdraw`. The view model closes it (state `withdrawn`, with the
reason) only when the same agent asked it in that conversation and it is still open: never
a consent card, which is the runtime's. A withdrawal that closes nothing changes nothing,
and the SDK files its code (`interaction_not_found`, `interaction_closed`) as the app's
diagnostic event `interaction.withdraw.refused`. An answer that reaches the chat after the
withdrawal is recorded refused (`sdk.actions.refuse`, code `withdrawn`), shown with one
sentence (`apps/chat/_refusals.py`), and never sent.
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
    "AppContext": "._app_core",
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

    from ._app_core import AppContext
    from ._declare import AppDeclaration, declare_app, declared_app, manifest_of, tool
    from ._log import EventLog, has_events_table
    from ._navigation import HOOKS
    from ._read import read_view
    from ._runtime_app import SDK, RuntimeApp
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
