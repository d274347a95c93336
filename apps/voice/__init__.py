"""Voice: the user's voice, recorded when the agent or the user asks, the sample installed
app of the microphone (`audio.record`).

Tool: `voice.request_recording` {prompt, max_seconds?}. Its manifest is generated from the
declarations in `_app` (`lineup app build apps/voice --out FILE`).
"""

from ._app import VoiceApp

__all__ = ["VoiceApp"]
