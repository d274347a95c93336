"""The question an agent has open in each conversation, kept beside its cursor: the one it
withdraws when the conversation moves on past it.

Each is kept with the stream position of the message it reacted to. A user's message
later in the stream moves on past it; a message at or before that position is one handled
again after a restart (the cursor was not saved), which must not withdraw the question its
first handling asked.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Final

from contracts import replace_file

log = logging.getLogger("lineup.agent")

OPEN_FILE: Final = "open_questions.json"


class OpenQuestions:
    """conversation → (interaction id, the stream position it was asked after); in memory,
    and in `state_dir` when there is one."""

    def __init__(self, state_dir: Path | None) -> None:
        self._path = None if state_dir is None else Path(state_dir) / OPEN_FILE
        self._open: dict[str, tuple[str, int]] = self._read()

    def _read(self) -> dict[str, tuple[str, int]]:
        if self._path is None:
            return {}
        try:
            kept = json.loads(self._path.read_text(encoding="utf-8"))
            return {str(c): (str(q), int(seq)) for c, (q, seq) in kept.items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, AttributeError):
            log.warning("%s: unreadable, ignored", self._path)
            return {}

    def _write(self) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(self._path, json.dumps(self._open) + "\n")

    def asked(self, conversation: str, interaction_id: str, after: int) -> None:
        """`interaction_id` is open now, asked in reaction to the message at `after`."""
        self._open[conversation] = (interaction_id, after)
        self._write()

    def closed(self, conversation: str, interaction_id: str) -> None:
        """Answered or withdrawn: no longer open (another question open since stays)."""
        if self._open.get(conversation, ("",))[0] == interaction_id:
            del self._open[conversation]
            self._write()

    def passed_by(self, conversation: str, seq: int) -> str | None:
        """The open question that a user's message at `seq` moves on past, if any."""
        question = self._open.get(conversation)
        return question[0] if question is not None and seq > question[1] else None
