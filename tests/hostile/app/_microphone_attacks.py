"""The hostile app against the microphone: a recording asked from the background, past the
runtime's cap, or without the user's yes; the user's side of a recording (the yes, the
recorded bytes, the stop, the page's word to stop) sent in the user's place; and the chat's
voice mode: switching a conversation's mode or the default one, a push-to-talk started or a
"spoken message" handed to the chat in the user's place, and an agent message forged for the
chat to speak."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.kernel import new_id

if TYPE_CHECKING:
    from ._app import HostileApp

GATEWAY = "capability_gateway"
WEBM = b"\x1a\x45\xdf\xa3" + b"\x00" * 60
CHAT = "app.chat"
RECORDING = {
    "artifact_id": "art_" + "0" * 26,
    "title": "Recording of 3 s",
    "media_type": "audio/webm",
    "size": 64,
    "duration_ms": 3000,
}
SPOKEN = {"conversation_id": "conv-1", "request_id": "chat/talk.x", "recording": RECORDING}
AGENT_SAYS = {
    "id": new_id(),
    "type": "lineup.message",
    "conversation_id": "conv-1",
    "sender": {"kind": "agent", "id": "demo"},
    "payload": {"text": "Say this aloud for me", "format": "plain"},
}


async def misuse_microphone(app: HostileApp, options: dict[str, Any]) -> dict[str, Any]:
    """Behind another app once the test says so, then in front once it says so again
    (`misuse_microphone_front`): each attempt's outcome."""
    await app.order("misuse_microphone")
    capabilities = app.sdk.capabilities
    key = "hostile/mic-1"
    behind = {
        "background": await capabilities.request("audio.record", "listen", {"max_seconds": 5}),
        "start": await app.attempt(GATEWAY, "capability_gateway.record_start", {"request_id": key}),
        "recorded": await app.attempt(
            GATEWAY,
            "capability_gateway.recorded",
            {"request_id": key, "data": WEBM, "media_type": "audio/webm"},
        ),
        "user's stop": await app.attempt(
            GATEWAY, "capability_gateway.record_stop", {"request_id": key}
        ),
        "page's stop": await app.attempt(
            "web_host",
            "web_host.recording.stop",
            {"conversation_id": "conv-1", "request_id": key},
        ),
        **await _misuse_voice_mode(app),
    }
    await app.order("misuse_microphone_front")
    return {
        **behind,
        "past the cap": await capabilities.request("audio.record", "listen", {"max_seconds": 121}),
        # Nobody presses Start recording: the request expires, nothing recorded.
        "unanswered": await capabilities.request(
            "audio.record", "listen", {"max_seconds": 5}, timeout_s=4
        ),
    }


async def _misuse_voice_mode(app: HostileApp) -> dict[str, str]:
    """The chat's voice mode, from an app: each attempt refused at the door."""
    mode = {"kind": "mode", "conversation_id": "conv-1", "mode": "audio"}
    talk = {"conversation_id": "conv-1", "talk_id": new_id()}
    return {
        "mode": await app.attempt(CHAT, "app.input", mode),
        "default mode": await app.attempt(
            CHAT, "app.interaction.settings", {"default_mode": "audio"}
        ),
        "talk": await app.attempt(GATEWAY, "capability_gateway.talk", talk),
        "spoken message": await app.attempt(CHAT, "app.interaction.recorded", SPOKEN),
        "agent's words": await app.attempt(CHAT, "app.deliver", {"messages": [AGENT_SAYS]}),
    }
