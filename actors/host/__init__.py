"""The host actor: the user's side of the runtime.

Three entries stay apart — the remote agent's tool calls, local UI actions and host
lifecycle intents — each with its own sender, source check and audit type. Agent
input reaches apps through the transport and the router; this actor is the only way in
for the other two. UI sessions (the terminal chat, the web host's pages) reach it through the
supervisor's UI socket (`ui.sock`, sender `ui`), never through an actor, so nothing an
agent says can pass for something the user did.

Its messages and where each goes are in `_actor`. A UI action reaches only apps with a UI
(the core apps chat, app-registry and settings); a chosen file is at most 192 KiB. A
malformed body, an unknown app or an oversized input (64 KiB) is refused by the
host with its code (`invalid_payload`, `app_not_installed`, `too_large`), audited, answered
with that code, and reaches no app. An app process, in turn, takes `app.input` from `host`
only (its door; its SDK checks again, and an input from any other sender is refused and
counted as `refused_inputs`).
"""

from ._actor import HOST_SOURCES, HostActor

__all__ = ["HOST_SOURCES", "HostActor"]
