"""The chat's audio mode in the gateway (mixed into `CapabilityGatewayActor`): the chat's own
speech, and the user's push-to-talk.

**The chat's own speech.** In a conversation the user put in audio mode, the chat (the
Interaction App, a core app) asks `speech.speak` for the agent's messages and
`speech.transcribe` for what the user recorded. The user turning the mode on, and pressing
the talk button, is their own act: these requests of the chat's need no consent card. They
pass every other check (declared, enabled, served here, the policy, the rate) and are audited
as any request, their start saying why no card asked (`CHAT_OWN`).

**Push-to-talk** (`capability_gateway.talk`, from the web host only: the page's talk button,
the user's press). The gateway opens an `audio.record` request of the chat in the page's
conversation, started at once: the press is the yes, as "Start recording" is on a card, so
no card asks. It is recorded like any page recording (`_recording`: the clock, the upload,
the checks of the bytes), but it follows the user's page, not an app in front, so no
foreground rule applies to it or ends it; it lasts at most `TALK_S`, what `speech.transcribe`
writes out at a time. Kept, the recording is the chat's artifact, handed to the chat
(`app.interaction.recorded`), which writes it out and sends it as the user's message. Its key is
`chat/talk.<the page's id for the press>`, so a press asked again is refused, never recorded
twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from actors.kernel import Actor, Message, derive_id, handles
from contracts import SCOPE_CHAT, CapabilityResult, Code, ContractError

from ._apps import AppFacts, app_facts
from ._db import GatewayFile
from ._recording import RECORD, UPLOAD_GRACE_S, LiveRecording
from ._recording import TALK_PREFIX as RECORDING_TALK_PREFIX
from ._requests import Pending, audit_row, finished_row, now_ms
from .door import MAX_RECORDING_BYTES, Talk

CHAT_OWN: Final = frozenset({"speech.speak", "speech.transcribe"})
CHAT_OWN_WHY: Final = "the chat's own, in a conversation the user put in voice mode: no card"
TALK_S: Final = 10
TALK_PREFIX: Final = RECORDING_TALK_PREFIX
TALK_PURPOSE: Final = "Your spoken message to the agent"
TALKED_SLOT: Final = 6  # the slot of the recording's word to the chat


def is_talk(key: str) -> bool:
    """Whether a request's key is a push-to-talk recording's."""
    return key.startswith(TALK_PREFIX)


class Talks(Actor):
    """The user's push-to-talk, recorded for the chat."""

    data_dir: Path
    core: dict[str, Any]
    counts: dict[str, int]
    recordings: dict[str, LiveRecording]
    file: GatewayFile
    write: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    store: Callable[[str, dict[str, Any]], Awaitable[Any]]
    registry: Callable[[], Awaitable[dict[str, Any]]]
    _refusal: Callable[..., tuple[CapabilityResult, str | None, str, str] | None]

    @handles("capability_gateway.talk")
    async def talk(self, msg: Message[Talk]) -> Any:
        """The page's talk button: {`request_id`, `max_ms`, `max_bytes`} of the recording
        started for the chat; a refusal's code and one sentence for the person otherwise."""
        await self.loaded.wait()  # type: ignore[attr-defined]
        key = f"{TALK_PREFIX}{msg.body['talk_id']}"
        stored = self.file.request(key)
        if stored is not None or key in self.recordings:
            raise ContractError(Code.INVALID_STATE, "This recording was made already: talk again.")
        facts: AppFacts = app_facts(await self.registry(), SCOPE_CHAT, self.core)
        created = now_ms()
        row: dict[str, Any] = {
            "request_id": key,
            "app_scope": SCOPE_CHAT,
            "capability": RECORD,
            "purpose": TALK_PURPOSE,
            "input": {"max_seconds": TALK_S},
            "prepared": None,
            "conversation_id": str(msg.body["conversation_id"]),
            "caller": "",  # nobody waits: the chat is handed the recording (`_talked`)
            "kernel_id": msg.id,
            "state": "asking",
            "status": None,
            "code": None,
            "output": None,
            "created_ms": created,
            "deadline_ms": created + int((TALK_S + UPLOAD_GRACE_S) * 1000),
            "updated_ms": created,
        }
        refusal = self._refusal(row, facts, pressed=True)
        if refusal is not None:
            status, code, audit_code, detail = refusal
            await self.write(
                {
                    "insert": finished_row(row, status, code),
                    "audit": [audit_row(audit_code, row, detail)],
                }
            )
            self.counts[status.value] += 1
            raise ContractError(Code(code or str(status)), _TALK_REFUSED.get(str(status), detail))
        await self.write({"insert": row, "audit": []})
        why = "the user's push-to-talk: the page records"
        live = await self._begin(Pending(row), "web", why)  # type: ignore[attr-defined]
        if live is None:
            raise ContractError(Code.INVALID_STATE, "The chat cannot record now: try again.")
        return {
            "request_id": key,
            "max_ms": int(live.limit_s * 1000),
            "max_bytes": MAX_RECORDING_BYTES,
        }

    async def _talked(self, row: dict[str, Any], output: dict[str, Any]) -> None:
        """The recording kept: the chat is handed it, to write it out and send it."""
        recording = {
            key: output[key]
            for key in ("artifact_id", "title", "media_type", "size", "duration_ms")
        }
        body = {
            "conversation_id": row["conversation_id"],
            "request_id": row["request_id"],
            "recording": recording,
        }
        await self.cast(
            f"app.{SCOPE_CHAT}",
            "app.interaction.recorded",
            body,
            id=derive_id(row["request_id"], TALKED_SLOT),
        )


# What the person is told when the talk button cannot record, by the request's status.
_TALK_REFUSED: Final = {
    str(CapabilityResult.PERMISSION_DENIED): "The chat may not record now: try again later.",
    str(CapabilityResult.UNSUPPORTED_ON_HOST): "This computer cannot record here.",
    str(CapabilityResult.POLICY_DENIED): "A policy does not allow recording here: type instead.",
    str(CapabilityResult.FAILED): "Too many recordings at once: wait a moment, then talk again.",
}
