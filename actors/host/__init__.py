"""The host actor: the user's side of the runtime.

Three entries stay apart — the remote agent's tool calls, local UI actions and host
lifecycle intents — each with its own sender, source check and audit type. Agent
input reaches apps through the transport and the router; this actor is the only way in
for the other two. UI sessions (the terminal chat, later a browser) reach it through the
supervisor's UI socket (`ui.sock`, sender `ui`), never through an actor, so nothing an
agent says can pass for something the user did.
"""

from ._actor import HOST_SOURCES, HostActor

__all__ = ["HOST_SOURCES", "HostActor"]
