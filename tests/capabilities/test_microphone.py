"""The microphone from a terminal: the runtime without its web host, on a host with a real
sound server (PulseAudio, whose null sink plays espeak-ng's speech into what the recorder
hears), and the voice app built, signed and installed through the CLI.

The user's "Record now" (`/1`) starts the recording in the gateway (`parec`), the terminal
chat says that it records and its `/stop` ends it; one that nobody stops ends at its limit.
Each is a WAV artifact of the voice app whose samples are the speech played, not silence.
"""

from __future__ import annotations

import array
import io
import math
import wave
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

import supervisor
from actors.runtime_token import write_token
from actors.store import read_artifact_data
from apps.chat import history
from lineup.terminal_chat import parse_line, render_new
from lineup.ui_session import UiSession
from tests.capabilities.helpers import answer, card_for, configure
from tests.installed.helpers import SignedApp, install_enabled, signed_app
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.sound import sound_server
from tests.tools.helpers import Agent, final_of, new_revision, tools_of
from tests.web.conftest import speech_wav

SCOPE = "voice"


@pytest.fixture(scope="module")
def voice(tmp_path_factory: pytest.TempPathFactory) -> SignedApp:
    return signed_app(tmp_path_factory.mktemp("voice"), SCOPE, SCOPE)


def level(wav_bytes: bytes) -> tuple[int, float]:
    """A WAV's duration (ms) and the root mean square of its samples (0 is silence)."""
    with wave.open(io.BytesIO(wav_bytes), "rb") as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (
            1,
            2,
            16_000,
        )
        samples = array.array("h")
        samples.frombytes(reader.readframes(reader.getnframes()))
    rms = math.sqrt(sum(x * x for x in samples) / max(1, len(samples)))
    return round(len(samples) / 16), rms


def recorded_bytes(stack: Stack, key: str) -> int:
    assert stack.runtime is not None
    actors = stack.runtime.control({"type": "actors", "stats": True})["actors"]
    gateway = next(a for a in actors if a["name"] == "capability_gateway")
    now = gateway["statistics"]["extra"]["recordings"].get(key) or {}
    return int(now.get("bytes", 0))


async def recorded(stack: Stack, call_id: str) -> tuple[dict[str, Any], bytes]:
    row = await final_of(stack, call_id, 60)
    assert row["state"] == "succeeded", (row["code"], row["history"])
    output = dict(row["output"])
    found = read_artifact_data(stack.data_dir, output["artifact"]["artifact_id"])
    assert found is not None
    artifact, data = found
    assert (artifact["app_scope"], artifact["media_type"]) == (SCOPE, "audio/wav")
    return output, data


async def test_the_terminal_records_from_the_sound_server_until_stop_or_the_limit(
    stack: Stack, voice: SignedApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    speech = speech_wav(tmp_path)
    with sound_server(tmp_path / "sound") as sound:
        # The runtime's configuration is made where it runs: on a host with this server.
        for name, value in sound.env.items():
            monkeypatch.setenv(name, value)
        await stack.start_appserver()
        configure(stack, {})
        assert stack.server is not None and stack.runtime is not None
        write_token(stack.data_dir / supervisor.TOKEN_FILE, stack.server.credentials.runtime_token)
        stack.runtime.start(wait=False, env=sound.env)
        await stack.wait_lifecycle("online")
        client = await stack.start_agent()
        await client.send_text(CONVERSATION, "hello")
        first = await new_revision(stack, 0)
        await install_enabled(stack, voice)
        await new_revision(stack, first)
        assert "voice.request_recording" in tools_of(stack)
        agent = Agent(stack, client, SCOPE)

        # Nobody stops it: the recording ends at its limit, the speech in it.
        player = sound.play(speech, times=4)
        arguments = {"prompt": "Say how long to focus", "max_seconds": 3}
        await client.submit(agent.invoke("call_limit", "voice.request_recording", arguments))
        card = await card_for(stack, "audio.record")
        answer(stack, card, "once")  # the terminal's "Record now"
        # The host writes speech out: the app asks, the user lets it for this run.
        answer(stack, await card_for(stack, "speech.transcribe"), "session")
        output, data = await recorded(stack, "call_limit")
        player.kill()
        player.wait()
        assert output["stopped"] == "limit"
        duration, rms = level(data)
        assert duration == output["duration_ms"] and 1_500 <= duration <= 3_000 + 1_500, output
        assert rms > 300, "the recording is silence"
        # Written out too (cut anywhere in the looping speech, so its words are not checked).
        assert isinstance(output.get("transcript"), str), output

        # The terminal chat says it records; its /stop ends the recording.
        arguments = {"prompt": "Talk until you stop", "max_seconds": 20}
        await client.submit(agent.invoke("call_stop", "voice.request_recording", arguments))
        card = await card_for(stack, "audio.record", {card})
        answer(stack, card, "once")

        def recording() -> dict[str, Any] | None:
            view = history(stack.data_dir, CONVERSATION)
            states = {item["id"]: item.get("state") for item in view["timeline"]}
            return view if states.get(card) == "recording" else None

        view = await wait_for(recording, 30, "the card saying it records")
        shown = [line.plain for line in render_new(view, {}) if isinstance(line, Text)]
        assert any("recording your microphone now: type /stop" in line for line in shown), shown
        stop = parse_line("/stop", view, CONVERSATION)
        assert stop == {"kind": "stop_recording", "request_id": card}
        # Stopped once the recorder has heard half a second (the gateway's statistics).
        await wait_for(lambda: recorded_bytes(stack, card) >= 16_000, 30, "half a second")
        UiSession(stack.data_dir, session_id="test").stop_recording(card)
        output, data = await recorded(stack, "call_stop")
        assert output["stopped"] == "user"
        assert 0 < level(data)[0] < 20_000
