"""What the chat tells the person about something of theirs it refused itself, by code: one
sentence saying what happened and what to do instead."""

from __future__ import annotations

from typing import Final

_SENTENCES: Final = {
    "withdrawn": "The agent no longer asks this question, so the answer was not sent:"
    " reply in a message instead.",
}


def refusal_sentence(code: object) -> str | None:
    """The sentence for a refusal's code; None for a code the chat does not refuse with."""
    return _SENTENCES.get(str(code))
