"""What the chat tells the person about something of theirs it refused itself, by code: one
sentence saying what happened and what to do instead."""

from __future__ import annotations

from typing import Final

_SENTENCES: Final = {
    "withdrawn": "The agent no longer asks this question, so the answer was not sent:"
    " reply in a message instead.",
    # A spoken message (the chat's voice mode) that was not written out: nothing was sent.
    "nothing_heard": "No words were made out in what you recorded, so nothing was sent:"
    " hold the button while you speak, close to the microphone, or type your message.",
    "unsupported_on_host": "This computer cannot write out speech, so nothing was sent:"
    " type your message instead.",
    "policy_denied": "A policy does not allow writing out speech here, so nothing was sent:"
    " type your message instead.",
    "too_large": "The recording was too long to write out, so nothing was sent: speak for"
    " at most ten seconds at a time.",
    "rate_limited": "Too many recordings came at once, so this one was not sent: wait a"
    " moment and speak again.",
    "failed": "What you said could not be written out, so nothing was sent: speak again,"
    " or type your message.",
}


def refusal_sentence(code: object) -> str | None:
    """The sentence for a refusal's code; None for a code the chat does not refuse with."""
    return _SENTENCES.get(str(code))
