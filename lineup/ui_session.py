"""A UI session's side of the host actor: what a terminal (or any local UI) sends.

Every request goes through the supervisor's UI socket (`DATA_DIR/ui.sock`), which stores
it for the host actor as sender `ui`; the host checks it, audits it and passes it to the
app (`app.input`) or to the app manager (a host lifecycle intent). A UI never writes to an
app, the store or the AppServer itself, and never uses the operator's control socket: the
UI socket can reach nothing but the host and stop nothing.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from actors.kernel import ui_request


def new_session_id(kind: str = "terminal") -> str:
    """A session id that tells sessions apart across hosts and processes."""
    return f"{kind}-{socket.gethostname()[:24]}-{os.getpid()}"


class UiSession:
    """One attached UI: open it, send the user's actions and the host's intents, close it."""

    def __init__(self, data_dir: Path, *, kind: str = "terminal", session_id: str = "") -> None:
        self.data_dir = data_dir
        self.kind = kind
        self.session_id = session_id or new_session_id(kind)

    def _send(self, message_type: str, body: dict[str, Any], timeout: float) -> str:
        request = {"type": message_type, "body": {"session_id": self.session_id, **body}}
        return str(ui_request(self.data_dir, request, timeout=timeout)["id"])

    def open(self, timeout: float = 10) -> str:
        return self._send("host.session.open", {"kind": self.kind}, timeout)

    def close(self, timeout: float = 10) -> str:
        return self._send("host.session.close", {}, timeout)

    def act(self, action: dict[str, Any], *, app_scope: str = "chat", timeout: float = 10) -> str:
        """The user's action in `app_scope`'s UI (chat: `send`, `answer`); its message id."""
        return self._send("host.ui.action", {"app_scope": app_scope, "input": action}, timeout)

    def choose_file(self, chosen: dict[str, Any], *, timeout: float = 10) -> str:
        """A file the user chose for an app's `file.open` request: `request_id`, `name`,
        `media_type`, `data` (the bytes, never a path)."""
        return self._send("host.file.chosen", chosen, timeout)

    def stop_recording(self, request_id: str, *, timeout: float = 10) -> str:
        """The user's stop of the recording `request_id` (the gateway's key) made here."""
        return self._send("host.recording.stop", {"request_id": request_id}, timeout)

    def intent(self, intent: str, *, app_scope: str | None = None, timeout: float = 10) -> str:
        body: dict[str, Any] = {"intent": intent}
        if app_scope is not None:
            body["app_scope"] = app_scope
        return self._send("host.intent", body, timeout)
