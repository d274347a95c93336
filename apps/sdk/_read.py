"""Reading an app's log from outside its process: what the command line shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._log import LOG_FILE, EventLog
from ._view import ConversationView


def read_view(app_dir: str | Path, conversation_id: str) -> dict[str, Any]:
    """An app's view of a conversation, read from its log (read-only, runtime up or not)."""
    view = ConversationView(conversation_id)
    if (Path(app_dir) / LOG_FILE).exists():
        log = EventLog(app_dir, readonly=True)
        try:
            if log.is_begun():
                for event in log.events(conversation_id=conversation_id):
                    view.apply(event)
        finally:
            log.close()
    return view.to_dict()
