"""What the game keeps to itself: each instance's current round, in its private directory.

The secret word of a round the user guesses must never reach the surface, and the surface
reads the instance's session data: so the round's truth (its call, word, the guesses and
strokes taken, the score before it, and the app's own end once decided) lives here, in
`rounds.json` (`{rounds: {instance: round}, pending: {call: {instance_id, round}}}`),
written whole to a new file then renamed, so a kill leaves either the old or the new file.
Session data holds only what the user may see.

Scoring: the user scores when they do their part (guess the word, or draw it and press
Done); the agent scores when time runs out or the user gives up. A round stopped by the
agent or in the chat scores for no one.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from contracts import replace_file

FILE: Final = "rounds.json"
USER_GUESSES: Final = "user_guesses"
USER_DRAWS: Final = "user_draws"
# Who scores for each end of a round.
SCORER: Final = {"guessed": "user", "drawn": "user", "time_up": "agent", "gave_up": "agent"}


def same_word(guess: str, word: str) -> bool:
    """A guess is right whatever its case and spaces ("Ice cream" is "icecream")."""
    return "".join(guess.split()).casefold() == "".join(word.split()).casefold()


def scored(before: dict[str, int], outcome: str) -> dict[str, int]:
    after = {"user": int(before.get("user", 0)), "agent": int(before.get("agent", 0))}
    scorer = SCORER.get(outcome)
    if scorer is not None:
        after[scorer] += 1
    return after


def seconds_between(start: str | None, end: float, most: int) -> int:
    """Whole seconds from `start` (RFC 3339) to `end` (epoch), within 0..`most`."""
    if not start:
        return 0
    begun = datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp()
    return min(most, max(0, math.ceil(end - begun)))


class Rounds:
    """The current round of each instance, and the rounds handed to the runtime that it has
    not yet said it took (`pending`, by call): the runtime refuses a round while another
    is open, so a new round replaces the current one only once the runtime's news of it
    shows it was taken. All kept in the app's private directory."""

    def __init__(self, folder: Path) -> None:
        self._path = folder / FILE
        kept = json.loads(self._path.read_text(encoding="utf-8")) if self._path.exists() else {}
        self._rounds: dict[str, dict[str, Any]] = kept.get("rounds", {})
        self._pending: dict[str, dict[str, Any]] = kept.get("pending", {})

    def get(self, instance_id: str) -> dict[str, Any] | None:
        found = self._rounds.get(instance_id)
        return dict(found) if found is not None else None

    def of_call(self, instance_id: str, call_id: str) -> dict[str, Any] | None:
        """The instance's round if it is the one of `call_id` (an older call's is gone),
        or the round of that call handed over, which becomes the instance's current one:
        the runtime's news of a call says it took its round. The other rounds handed over
        for the instance by then were refused (that round was open: one at a time), and
        are dropped."""
        found = self.get(instance_id)
        handed = self._pending.pop(call_id, None)
        if handed is not None:
            found = dict(handed["round"])
        elif found is None or found["call_id"] != call_id:
            return None
        for other in [c for c, r in self._pending.items() if r["instance_id"] == instance_id]:
            del self._pending[other]
        self.put(instance_id, found)
        return found

    def hand_over(self, instance_id: str, record: dict[str, Any]) -> None:
        """A round its call hands to the runtime: kept aside until the runtime takes it."""
        self._pending[record["call_id"]] = {"instance_id": instance_id, "round": dict(record)}
        self._save()

    def put(self, instance_id: str, record: dict[str, Any]) -> None:
        self._rounds[instance_id] = dict(record)
        self._save()

    def _save(self) -> None:
        kept = {"rounds": self._rounds, "pending": self._pending}
        replace_file(self._path, json.dumps(kept, ensure_ascii=False))
