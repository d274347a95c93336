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
"""

from ._actor import WebHostActor
from ._state import endpoint_alive, mint_key, read_endpoint, web_url

__all__ = ["WebHostActor", "endpoint_alive", "mint_key", "read_endpoint", "web_url"]
