"""The web host's HTTP server: Starlette on Hypercorn's trio worker, on 127.0.0.1 only.

| route | what |
|---|---|
| `/?key=KEY` | takes the one-time key, sets the session cookie, sends the browser to `/` |
| `/` | the page shell (`static/index.html`) |
| `/app.js`, `/timeline.js`, `/recorder.js`, `/voice.js`, `/notify.js`, `/style.css` | scripts |
| `/ws` | the page's WebSocket (`_socket`) |
| `/surface/{token}/{path}`, `/surface-bridge.js` | an app's surface in the iframe, its bridge |
| `/surfaces.js`, `/surface-socket` | the page's side of surfaces (`_bridge`) |
| `/artifact/{conversation}/{id}` | a picture the conversation shows (`_artifacts`) |
| `/saved/{token}` | what the user saved, as a download (`_artifacts`) |
| `/upload/{token}` (POST) | a file a user chose, or a recording, for an app (`_uploads`) |

Every route is behind the access rule (`_access.Guard`).
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path
from typing import Any, Final

import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from ._access import Guard
from ._artifacts import Artifacts
from ._bridge import Surfaces
from ._changes import PageNotices
from ._notifications import PageNotifications
from ._socket import page_socket
from ._state import LOOPBACK
from ._uploads import PagesAndUploads

log = logging.getLogger("lineup.web_host")

STATIC: Final = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/timeline.js": ("timeline.js", "text/javascript; charset=utf-8"),
    "/recorder.js": ("recorder.js", "text/javascript; charset=utf-8"),
    "/voice.js": ("voice.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
    "/notify.js": ("notify.js", "text/javascript; charset=utf-8"),
}
MAX_PAGE_FRAME: Final = 256 * 1024  # bytes of one WebSocket message from a page


def _files() -> dict[str, tuple[bytes, str]]:
    package = resources.files(__package__) / "static"
    return {
        route: (package.joinpath(name).read_bytes(), media_type)
        for route, (name, media_type) in STATIC.items()
    }


def build_app(
    data_dir: Path,
    counters: dict[str, int],
    surfaces: Surfaces,
    notices: PageNotices,
    *,
    artifacts: Artifacts,
    notifications: PageNotifications,
    pages: PagesAndUploads,
) -> Guard:
    files = _files()

    async def static(request: Request) -> Response:
        body, media_type = files[request.url.path]
        return Response(body, media_type=media_type)

    async def websocket(socket: WebSocket) -> None:
        await page_socket(
            socket,
            data_dir,
            counters,
            notices,
            artifacts=artifacts,
            notifications=notifications,
            pages=pages,
        )

    routes: list[Any] = [Route(path, static) for path in STATIC]
    routes += [
        *surfaces.routes(),  # installed apps' surfaces, their bridge (`_bridge`)
        *artifacts.routes(),  # previews and saved files (`_artifacts`)
        *pages.routes(),  # the files users choose and what they record in the page (`_uploads`)
        WebSocketRoute("/ws", websocket),
    ]
    return Guard(Starlette(routes=routes), data_dir)


async def serve(
    app: Guard,
    port: int,
    *,
    task_status: trio.TaskStatus[tuple[int, Guard]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `app` (`build_app`) on 127.0.0.1:`port` (0: any free port) until cancelled;
    started with the port it listens on."""
    config = Config()
    config.bind = [f"{LOOPBACK}:{port}"]
    config.websocket_max_message_size = MAX_PAGE_FRAME
    config.include_server_header = False
    config.accesslog = None
    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(
            lambda task_status: hypercorn_serve(app, config, task_status=task_status)  # type: ignore[arg-type]
        )
        app.port = int(binds[0].rsplit(":", 1)[1])
        task_status.started((app.port, app))
