"""The voice app: a recording of the user's voice, asked by the agent or by the user.

`voice.request_recording` {prompt, max_seconds?} brings the app in front, shows the prompt
and asks the runtime for the microphone (`audio.record`): the user answers the card in the
chat with "Start recording", speaks while the page shows that it records, and stops (or the
time runs out, or the app leaves the front: the runtime stops it then). The call's one
final carries the recording as the app's artifact, how long it lasts and why it stopped,
and, where the host writes speech out (`speech.transcribe` served), what was said. The
user can record from the surface too (Record), stop early (Stop: the app ends its own
recording) and hear the last recording again (Replay).

The surface cannot fetch anything (its frame has no network): Replay asks the app, which
reads its artifact and hands it to the surface as a `data:` URL in a state patch, for a
recording of at most `MAX_REPLAY_BYTES` (a minute of the page's Opus); a longer one says it
is too long to replay here. What the surface shows is the instance's session data:
{`state`, `prompt`, `max_seconds`, `request_id`?, `recording`? (the artifact's reference,
`duration_ms`, `stopped`), `transcript`?, `problem`?}.
"""

from __future__ import annotations

import base64
import logging
import secrets
from typing import Any, Final

from apps.sdk import CallFailed, RuntimeApp, ToolCall, declare_app, tool
from contracts import Code, ContractError

log = logging.getLogger("lineup.app")

ANSWER_S: Final = 60.0  # how long the user has to answer the card
MAX_SECONDS: Final = 120  # the runtime's cap on one recording
DEFAULT_SECONDS: Final = 15
# A state patch travels in one message (256 KiB): its base64 must fit with room to spare.
MAX_REPLAY_BYTES: Final = 96 * 1024
# What the gateway answered, as the tool's error: every refusal is one of a tool's codes.
REFUSALS: Final = {
    "permission_denied": Code.PERMISSION_DENIED,
    "policy_denied": Code.PERMISSION_DENIED,
    "cancelled_by_user": Code.CANCELLED_BY_USER,
    "expired": Code.OPERATION_EXPIRED,
}
# Why each refusal is, in the user's words, on the surface.
PROBLEMS: Final = {
    "permission_denied": "You did not let it record.",
    "policy_denied": "A policy keeps this app from recording.",
    "cancelled_by_user": "You decided later: press Record to try again.",
    "expired": "Nobody answered in time: press Record to try again.",
    "unsupported_on_host": "This computer cannot record for apps.",
}

_REFERENCE = {
    "type": "object",
    "properties": {
        "artifact_id": {"type": "string"},
        "title": {"type": "string"},
        "media_type": {"type": "string"},
        "size": {"type": "integer", "minimum": 0},
    },
    "required": ["artifact_id", "title", "media_type", "size"],
    "additionalProperties": False,
}
_NOTHING = {"type": "object", "additionalProperties": False}


@declare_app(
    app_scope="voice",
    version="0.1.0",
    title="Voice",
    entrypoints=[
        {
            "id": "recorder",
            "kind": "contextual",
            "surface": "ui/index.html",
            "surface_events": [
                {"name": name, "payload_schema": _NOTHING} for name in ("record", "stop", "replay")
            ],
            "display_modes": ["stage"],
        }
    ],
    required_features=[
        "app.lifecycle.v1",
        "app.tools.v1",
        "app.session-data.v1",
        "capability.request.v1",
    ],
    optional_features=["surface.state.v1"],
    capabilities=["audio.record", "speech.transcribe"],
    agent_subscriptions=[{"type": "lineup.tool.invoke", "scope": "conversation"}],
)
class VoiceApp(RuntimeApp):
    async def on_app_start(self) -> None:
        self.sdk.surface.on_event("record", self._record_pressed)
        self.sdk.surface.on_event("stop", self._stop_pressed)
        self.sdk.surface.on_event("replay", self._replay_pressed)

    @tool(
        "voice.request_recording",
        title="Record the user's voice",
        input_schema={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "minLength": 1, "maxLength": 300},
                "max_seconds": {"type": "integer", "minimum": 1, "maximum": MAX_SECONDS},
            },
            "required": ["prompt"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "artifact": _REFERENCE,
                "duration_ms": {"type": "integer", "minimum": 0},
                "stopped": {"enum": ["user", "limit", "background"]},
                "transcript": {"type": "string"},
            },
            "required": ["artifact", "duration_ms", "stopped"],
            "additionalProperties": False,
        },
        call_model="interactive",
        # The user's answer may take ANSWER_S, the recording MAX_SECONDS, its upload more.
        timeout_ms=int((ANSWER_S + MAX_SECONDS + 60) * 1000),
        risk="high",
        # The runtime records only for the app in front: it comes forward to ask.
        activation_requirement="foreground_required",
        launch_policy={"launch": "if_needed", "focus": "foreground"},
        # What the tool needs: the microphone. The transcript is where the host offers it,
        # so the tool is offered where speech is not written out too.
        capabilities=["audio.record"],
    )
    async def request_recording(self, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """Shows the prompt in the voice app and asks the user, in the chat, to record
        their voice (at most `max_seconds`, 15 when left out, 120 at most). {artifact: the
        recording (WebM or Ogg from the page, WAV from a terminal), duration_ms, stopped:
        user / limit / background, transcript?: what was said, where this host writes
        speech out}. `permission_denied` when the user says no, `cancelled_by_user` when
        they decide later, `operation_expired` when nobody answers within a minute."""
        if call.instance_id is None:
            raise ContractError(Code.HANDLER_FAILED, "the call came without its instance")
        seconds = int(arguments.get("max_seconds", DEFAULT_SECONDS))
        request_id = f"voice-{call.call_id}"[:80]
        prompt = str(arguments["prompt"])
        outcome = await self._record(call.instance_id, prompt, seconds, request_id)
        status = str(outcome.get("status"))
        if status != "completed":
            refusal = REFUSALS.get(status, Code.HANDLER_FAILED)
            raise ContractError(refusal, f"audio.record: {status} {outcome.get('code') or ''}")
        output = outcome["output"]
        result: dict[str, Any] = {
            "artifact": {k: output[k] for k in ("artifact_id", "title", "media_type", "size")},
            "duration_ms": int(output["duration_ms"]),
            "stopped": str(output["stopped"]),
        }
        if outcome.get("transcript") is not None:
            result["transcript"] = str(outcome["transcript"])
        return result

    async def _record(
        self, instance_id: str, prompt: str, seconds: int, request_id: str
    ) -> dict[str, Any]:
        """Ask for the microphone, keep what the surface shows up to date, and write out
        what was said where the host can: the gateway's answer, with `transcript`."""
        shown = {"state": "asking", "prompt": prompt, "max_seconds": seconds}
        await self._show(instance_id, {**shown, "request_id": request_id})
        answer = await self.sdk.capabilities.request(
            "audio.record",
            prompt,
            {"max_seconds": seconds},
            timeout_s=ANSWER_S,
            request_id=request_id,
        )
        status = str(answer.get("status"))
        if status != "completed":
            problem = PROBLEMS.get(status, "The recording did not work: press Record to try again.")
            await self._show(instance_id, {**shown, "state": "failed", "problem": problem})
            return dict(answer)
        output = dict(answer["output"])
        recording = {
            k: output[k] for k in ("artifact_id", "title", "media_type", "size", "duration_ms")
        }
        recording["stopped"] = output["stopped"]
        await self._show(instance_id, {**shown, "state": "recorded", "recording": recording})
        transcript = await self._transcript(str(output["artifact_id"]))
        if transcript is not None:
            done = {**shown, "state": "recorded", "recording": recording, "transcript": transcript}
            await self._show(instance_id, done)
        return {**answer, "transcript": transcript}

    async def _transcript(self, artifact_id: str) -> str | None:
        """What was said, where this host writes speech out; None where it does not."""
        answer = await self.sdk.capabilities.request(
            "speech.transcribe",
            "write out what you just recorded",
            {"artifact_id": artifact_id},
            timeout_s=ANSWER_S,
        )
        if answer.get("status") != "completed":
            log.info("no transcript: %s %s", answer.get("status"), answer.get("code") or "")
            return None
        return str((answer.get("output") or {}).get("text", ""))

    async def _show(self, instance_id: str, data: dict[str, Any]) -> None:
        """Write what the surface shows, whatever was there (the app is its one writer)."""
        for _ in range(4):
            snapshot = await self.sdk.session_data.get(instance_id=instance_id)
            try:
                await self.sdk.session_data.replace(
                    data, snapshot["revision"], instance_id=instance_id
                )
            except CallFailed as failed:
                if failed.code != Code.REVISION_CONFLICT:
                    raise
            else:
                return

    # -- the surface's buttons -----------------------------------------------------------------

    async def _shown(self, instance_id: str) -> dict[str, Any]:
        snapshot = await self.sdk.session_data.get(instance_id=instance_id)
        return dict(snapshot.get("data") or {})

    async def _record_pressed(self, payload: dict[str, Any], instance_id: str) -> None:
        """The user's Record: a recording of the app's own asking, not a call's."""
        shown = await self._shown(instance_id)
        if shown.get("state") == "asking":
            return  # one at a time: the card open already answers it
        prompt = str(shown.get("prompt") or "Record a note")
        seconds = int(shown.get("max_seconds") or DEFAULT_SECONDS)
        request_id = f"voice-own-{secrets.token_hex(8)}"
        self.nursery.start_soon(self._record, instance_id, prompt, seconds, request_id)

    async def _stop_pressed(self, payload: dict[str, Any], instance_id: str) -> None:
        """The user's Stop on the surface: the app ends its own recording early."""
        shown = await self._shown(instance_id)
        if shown.get("state") == "asking" and shown.get("request_id"):
            await self.sdk.capabilities.stop_recording(str(shown["request_id"]))

    async def _replay_pressed(self, payload: dict[str, Any], instance_id: str) -> None:
        """The user's Replay: the last recording handed to the surface as a `data:` URL."""
        recording = (await self._shown(instance_id)).get("recording") or {}
        if not recording.get("artifact_id"):
            return
        if int(recording.get("size") or 0) > MAX_REPLAY_BYTES:
            replay = {"problem": "This recording is too long to replay here."}
        else:
            read = await self.sdk.artifacts.read(str(recording["artifact_id"]))
            media_type = str(read["artifact"]["media_type"])
            encoded = base64.b64encode(bytes(read["data"])).decode("ascii")
            replay = {"src": f"data:{media_type};base64,{encoded}", "title": recording["title"]}
        await self.sdk.surface.patch({"replay": replay}, instance_id=instance_id)
