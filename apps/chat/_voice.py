"""The chat's audio mode: the agent's messages spoken, the user's spoken messages written out.

A conversation's mode is the user's choice (`sdk.interaction.set_mode`, from the page's
Voice switch or the terminal's `/mode`). The chat asks the capability gateway for speech
itself, as the Interaction App: the user turning the mode on is their own act, so no consent
card asks them again, and the gateway audits each request as any other.

**Speaking** (`Speaker`). An agent's text message (`lineup.message`) that arrives in a
conversation in audio mode is said in parts (`spoken_parts`), each a `speech.speak` request
whose WAV artifact is recorded on the message (`sdk.interaction.add_speech`): the page plays
the parts in order, the terminal with the sound server's player. One message at a time, in
the order they came, in a task of its own: what the agent says is shown at once, whatever
speech takes. A message that was sent more than `FRESH_S` before it arrives (a catch-up
after the runtime was away) is shown, not spoken; so are the parts past `MAX_PARTS`, and
those after the user turned the mode off. A part the gateway refuses as asked too often is
asked again once its rate may allow it (`RATE_WAIT_S`, for about half a minute), so a long
answer is said whole at the gateway's pace. Speech that was not made (the host has no
engine, a policy denies it, the rate did not allow it in time) leaves the message as it is,
unspoken from there.

**Writing out** (`recorded`). What the user recorded with the page's push-to-talk reaches
the chat from the capability gateway as the chat's artifact (`app.interaction.recorded`). The
chat asks `speech.transcribe` for it and sends what was said as the user's message, in
audio mode, with the recording handed to the agent beside it (`audio`: its reference).
When no words were made out, or the host could not write it out, nothing is sent: the
message is shown refused with one sentence saying why and what to do (`_refusals`).
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import trio

from contracts import Code

from ._spoken_text import spoken_parts

if TYPE_CHECKING:
    from apps.sdk import SDK

log = logging.getLogger("lineup.chat")

SPEAK: Final = "speech.speak"
TRANSCRIBE: Final = "speech.transcribe"
FRESH_S: Final = 60.0
MAX_PARTS: Final = 6  # about half a minute of speech for one message
WAITING: Final = 32  # messages waiting to be spoken; past it, the newest is shown only
# A part the gateway refuses as asked too often is asked again this much later (its default
# rate gives an app a request every two seconds), up to about half a minute.
RATE_WAIT_S: Final = 2.0
RATE_TRIES: Final = 15
PURPOSE: Final = "Say the agent's message aloud: this conversation is in voice mode"
REFERENCE: Final = ("artifact_id", "title", "media_type", "size")


def _fresh(message: dict[str, Any]) -> bool:
    """Sent less than `FRESH_S` ago (by its timestamp; one without is taken as new)."""
    stamp = message.get("timestamp")
    if not isinstance(stamp, str):
        return True
    try:
        sent = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return True
    return time.time() - sent < FRESH_S


class Speaker:
    """The agent's messages in audio mode, said one after another."""

    def __init__(self, sdk: SDK) -> None:
        self.sdk = sdk
        self.send, self.receive = trio.open_memory_channel[dict[str, Any]](WAITING)
        self.spoken = 0  # parts made, for the chat's statistics
        self.unspoken = 0  # messages or parts left unsaid: speech refused, or too many

    def heard(self, message: dict[str, Any]) -> None:
        """An agent's message delivered (`sdk.agent_messages.subscribe`)."""
        conversation = str(message["conversation_id"])
        if message.get("type") != "lineup.message" or not _fresh(message):
            return
        if self.sdk.interaction.mode(conversation) != "audio":
            return
        try:
            self.send.send_nowait(message)
        except trio.WouldBlock:
            self.unspoken += 1
            log.info("too much to say at once in %s: a message is shown only", conversation)

    async def run(self) -> None:
        async for message in self.receive:
            await self._say(message)

    async def _say(self, message: dict[str, Any]) -> None:
        conversation, message_id = str(message["conversation_id"]), str(message["id"])
        payload = message.get("payload") or {}
        parts = spoken_parts(str(payload.get("text", "")), str(payload.get("format", "")))
        self.unspoken += max(0, len(parts) - MAX_PARTS)
        for index, words in enumerate(parts[:MAX_PARTS]):
            if self.sdk.interaction.mode(conversation) != "audio":
                return  # the user turned it off meanwhile: the rest is not said
            result = await self._ask(conversation, f"speak.{message_id}.{index}", words)
            if result is None:
                return  # the user turned it off while the part waited
            output = result.get("output") or {}
            if result["status"] != "completed" or not isinstance(output.get("artifact"), dict):
                self.unspoken += 1
                log.info(
                    "speech of %s refused: %s %s", message_id, result["status"], result.get("code")
                )
                return
            reference = {key: output["artifact"].get(key) for key in REFERENCE}
            duration = int(output.get("duration_ms") or 0)
            await self.sdk.interaction.add_speech(
                conversation, message_id, index, reference, duration
            )
            self.spoken += 1

    async def _ask(self, conversation: str, request_id: str, words: str) -> dict[str, Any] | None:
        """The gateway's answer for one part. One refused as asked too often is asked again
        under a new request id once the rate may allow it: the gateway's limit holds, the
        chat waits for it, so a long answer is said whole. None if voice mode ended
        meanwhile."""
        for attempt in range(RATE_TRIES):
            if attempt:  # the last refusal was the rate's: wait, then ask again
                await trio.sleep(RATE_WAIT_S)
                if self.sdk.interaction.mode(conversation) != "audio":
                    return None
            result = await self.sdk.capabilities.request(
                SPEAK,
                PURPOSE,
                {"text": words},
                request_id=f"{request_id}.{attempt}" if attempt else request_id,
            )
            if result.get("code") != "rate_limited":
                break
        return result


async def recorded(sdk: SDK, body: dict[str, Any]) -> None:
    """What the user said with push-to-talk, written out and sent as their message, or
    shown refused with why."""
    conversation = str(body["conversation_id"])
    recording = dict(body["recording"])
    reference = {key: recording[key] for key in REFERENCE}
    talk = str(body["request_id"]).rpartition("/")[2]
    result = await sdk.capabilities.request(
        TRANSCRIBE,
        "Write out what you said, to send it as your message",
        {"artifact_id": reference["artifact_id"]},
        request_id=f"transcribe.{talk}"[:80],
    )
    text = " ".join(str((result.get("output") or {}).get("text", "")).split())
    action = {
        "action": "send_text",
        "conversation_id": conversation,
        "text": text or str(reference["title"]),
        "mode": "audio",
        "audio": reference,
    }
    if result["status"] == "completed" and text:
        await sdk.actions.dispatch(action)
        return
    code = Code.NOTHING_HEARD
    if result["status"] != "completed":
        code = Code(str(result.get("code") or result["status"]))
    log.info("a spoken message in %s was not sent: %s", conversation, code)
    await sdk.actions.refuse(action, code)
