"""The web host: the user's window in a browser, on loopback.

A supervised process (`_actor`) serving the page shell, its script and styles and one
WebSocket per page (`_server`, `_socket`), behind the access rule (`_access`: a one-time
key for an HttpOnly, SameSite=Strict session cookie; Host and Origin checked). On the
user's side like the terminal chat: actions go to the host actor through the UI socket
(checked first, `_inputs`); what the page shows is the chat and registry apps'
projections (`_views`, Markdown as a tree the page builds without HTML: `_markdown`).
`_state` keeps its files in `DATA_DIR/web/`; the command line uses it to print the address.
`_surfaces` and `_bridge` frame installed apps' surfaces in the shell and relay their bridge.
`_artifacts` serves a conversation's pictures and the user's saves; `_uploads` takes the
file a user chooses in a card for an app, and hands the pages a file an app saved for them;
`_notifications` shows the apps' notifications on the open pages.

The web host is the supervised child `web_host`, started last:
`actors.runtime_children.default_config(web_port=N)` adds it, which `lineup run` does
unless `--no-web`. Killed, it restarts by its policy and the open pages reconnect. For the
chat and the registry it is a UI client, as the terminal chat is:

- it listens with Starlette on Hypercorn's trio worker, on `127.0.0.1` only: `--web-port
  N`, or a free port chosen at its first start and kept for the run
  (`DATA_DIR/web/endpoint.json`), so a restarted web host is where the pages look for it;
  the next run tries the last run's port first, so a data dir keeps its address while that
  port is free;
- it sends each page action as `host.ui.action` (the chat: `send`, `answer`, `stop`,
  `dismiss`, `mode`; the app registry: `enable`, `disable`, `set_default`, `remove` with
  the user's confirmation) or `host.intent` (`open_app`, `focus_app`, `close_app`) through
  the supervisor's UI socket, in a UI session `web-<page id>` of kind `web`; the host checks
  and audits it as any UI action. The user's Save of an artifact
  (`capability_gateway.save_artifact`), a file the user chose in a card
  (`capability_gateway.file_chosen`) and a recording (`record_start`, `recorded`, `talk`)
  are calls of its own to the capability gateway, whose answers the page needs;
- it reads the chat app's view of the page's conversation, folded from its log as `lineup
  chat history` does (`apps.sdk` `EventLog`, `ConversationView`); the registry, the focus
  stack, the default app and the last operations from the app manager's file, and the link
  state from the store's, each with its owner's read-only reader kept open per page socket
  (`RegistryReader`, `RuntimeReader`: a fresh connection's first statement reads the
  schema, several times a read on a kept one); an artifact's bytes
  for a preview or a download (`read_artifact_data`);
- it never talks to the AppServer or the store's writer, reaches an app's process only to
  relay its surface's requests (`app.surface.request`), and never reads or serves the
  AppServer token.

**The page** (`static/`: plain HTML, CSS and JavaScript served from the package, no build
step, nothing from another origin). It fills the viewport and only its panes scroll. On
the left are the views (Conversation, Apps) and the switcher: the focus stack by app
title, the one in front first and marked (`aria-current`); a click focuses an app, a close
button closes it (not the chat's). The main area is the stage: while an installed app's
surface is framed (`surfaces.js` tells `app.js` with a `lineup:stage` event), that app
takes it and the chat is docked beside it, resizable with a handle (mouse or arrow keys)
and hidden or shown by a button, the choice and the width kept in the browser; with the
chat in front the chat is the main area. Below 720 px wide the views and the switcher are
a strip on top and the app and the chat take the area in turn.

An app whose entrypoint declares the `pip` display mode stays in view while another is in
front, its frame floating small over the chat (`data-pip`). One whose first declared mode
is `inline` is a card in the conversation's timeline (`data-inline`, `#surface-card`),
placed after what the conversation held when it opened, with an "Expand" button to the
stage when it declares `stage`, and the stage's "Move into the chat" makes it a card
again. A surface may ask for another of its declared modes (`display.request` on the
bridge), at most 4 a second: the page decides, answers with the mode in force and tells
the surface each change (`display`); a surface not in front never brings itself to the
front. Full screen (`body[data-display]`) gives the stage the whole window until its
button, Escape, or the app leaving the front. The page frames one surface at a time and
moves the frame between the stage and the card with `moveBefore`, which keeps its
document. The frame is as tall as the surface's document, which the bridge reports
(`size`), within the place's bounds (docs/protocol.md, "The surface bridge"). The display
requests and sizes are the page's alone and are not relayed to the web host.

The timeline (`static/timeline.js`) holds its items in blocks of 50 (`<ol role="none">`
inside the `role="list"`); a block out of view, the last one excepted, is
`content-visibility: auto`, so docking the chat or resizing the window lays out the blocks
in view, not the whole conversation. The window's grid has one row, the window's height.
What is the machinery's is not on screen: the surface relay counters are kept in the DOM
(`#surface-debug`, hidden) and reported to the web host; states read as words (a
delivered message shows none); a task is named by its title, or by its label when its
title is a machine-made id; an answered question shows the answer given, a withdrawn one
"No longer asked" with the agent's reason; the runtime's own question (an app's
permission request) is from "LineUp". The registry offers a record only what it can take:
a core app no Remove, the chat no Disable either, the row saying why. A deadline
operation's timer is worded again every 15 s in the page (`deadlineWords` in
`static/app.js`), without asking the web host.

**Connection state**, in the page's header beside the conversation's name: `connecting`
(before the page's socket first opens, or while the runtime starts), `online`, `offline`
(the runtime cannot reach the AppServer: messages are kept `pending` until it is back),
`reconnecting` (a socket that was open is down: what the user does waits in the page,
shown as pending, and is sent when it is back), and `stopped`: the page stops trying and
says, in one line, to start the runtime with `lineup run` and open a new address. A runtime
stopping cleanly stops the web host first; each page socket, cancelled, asks the UI socket
for the runtime's state and, when it is `stopping`, sends the page `stopped` before it
closes (within 1 s). A web host stopped alone, or a runtime killed, says nothing: the page
says `stopped` once it has stayed down for 20 s.
"""

from ._actor import WebHostActor
from ._state import endpoint_listening, mint_key, read_endpoint, web_url

__all__ = ["WebHostActor", "endpoint_listening", "mint_key", "read_endpoint", "web_url"]
