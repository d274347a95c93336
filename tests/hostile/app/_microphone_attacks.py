"""The hostile app against the microphone: a recording asked from the background, past the
runtime's cap, or without the user's yes; the user's side of a recording (the yes, the
recorded bytes, the stop, the page's word to stop) sent in the user's place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import HostileApp

GATEWAY = "capability_gateway"
WEBM = b"\x1a\x45\xdf\xa3" + b"\x00" * 60


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
