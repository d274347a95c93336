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

from actors import runtime_children
from actors.runtime_token import write_token
from actors.store import read_artifact_data, read_artifacts
from apps.chat import history
from lineup.terminal_chat import parse_line, render_new
from lineup.ui_session import UiSession
from tests.capabilities.helpers import answer, card_for, configure
from tests.capabilities.helpers import requests as gateway_requests
from tests.installed.conftest import sample_apps  # noqa: F401 - the signed sample apps
from tests.installed.helpers import SampleApps, SignedApp, install_enabled
from tests.runtime.helpers import CONVERSATION, Stack, wait_for
from tests.sound import sound_server
from tests.tools.helpers import Agent, final_of, new_revision, tools_of
from tests.web.conftest import speech_wav

SCOPE = "voice"


@pytest.fixture(scope="module")
def voice(sample_apps: SampleApps) -> SignedApp:  # noqa: F811 - the fixture imported above
    return sample_apps(SCOPE, SCOPE)


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


def gateway_state(stack: Stack, key: str) -> tuple[str, str] | None:
    found = [(r["status"], r["code"]) for r in gateway_requests(stack) if r["request_id"] == key]
    return found[0] if found else None


async def recorded(stack: Stack, call_id: str) -> tuple[dict[str, Any], bytes]:
    row = await final_of(stack, call_id, 60)
    assert row["state"] == "succeeded", (row["code"], row["history"])
    output = dict(row["output"])
    found = read_artifact_data(stack.data_dir, output["artifact"]["artifact_id"])
    assert found is not None
    artifact, data = found
    assert (artifact["app_scope"], artifact["media_type"]) == (SCOPE, "audio/wav")
    return output, data


async def voice_on_a_sound_server(stack: Stack, voice: SignedApp, env: dict[str, str]) -> Agent:
    """The AppServer, the runtime without its web host (its processes with `env`), the
    agent in the conversation and the voice app installed and offered: the agent's side."""
    await stack.start_appserver()
    configure(stack, {})
    assert stack.server is not None and stack.runtime is not None
    write_token(
        stack.data_dir / runtime_children.TOKEN_FILE, stack.server.credentials.runtime_token
    )
    stack.runtime.start(wait=False, env=env)
    await stack.wait_lifecycle("online")
    client = await stack.start_agent()
    await client.send_text(CONVERSATION, "hello")
    first = await new_revision(stack, 0)
    await install_enabled(stack, voice)
    await new_revision(stack, first)
    assert "voice.request_recording" in tools_of(stack)
    return Agent(stack, client, SCOPE)


async def ask(agent: Agent, call_id: str, seconds: int, known: set[str]) -> str:
    """The agent asks for a recording; the user's "Record now" (the terminal's `/1`) on its
    card, whose id is added to `known` and given back."""
    arguments = {"prompt": "Say how long to focus", "max_seconds": seconds}
    await agent.client.submit(agent.invoke(call_id, "voice.request_recording", arguments))
    card = await card_for(agent.stack, "audio.record", known)
    known.add(card)
    answer(agent.stack, card, "once")
    return card


async def test_the_terminal_records_from_the_sound_server_until_stop_or_the_limit(
    stack: Stack, voice: SignedApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    speech = speech_wav(tmp_path)
    with sound_server(tmp_path / "sound") as sound:
        # The runtime's configuration is made where it runs: on a host with this server.
        for name, value in sound.env.items():
            monkeypatch.setenv(name, value)
        agent = await voice_on_a_sound_server(stack, voice, sound.env)
        known: set[str] = set()

        # Nobody stops it: the recording ends at its limit, the speech in it.
        player = sound.play(speech, times=4)
        await ask(agent, "call_limit", 3, known)
        # The host writes speech out: the app asks, the user lets it for this run.
        answer(stack, await card_for(stack, "speech.transcribe"), "session")
        output, data = await recorded(stack, "call_limit")
        player.kill()
        player.wait()
        assert output["stopped"] == "limit"
        duration, rms = level(data)
        # The limit is the recorder's clock; the sound server's stream takes a moment to
        # start (up to half of a 3 s limit on a loaded machine), so less is heard.
        assert duration == output["duration_ms"] and 1_000 <= duration <= 3_000 + 1_500, output
        assert rms > 300, "the recording is silence"
        # Written out too (cut anywhere in the looping speech, so its words are not checked).
        assert isinstance(output.get("transcript"), str), output

        await stopped_in_the_terminal(stack, await ask(agent, "call_stop", 20, known))

        # The agent cancels its call while it records: the recording stops, nothing kept.
        card = await ask(agent, "call_gone", 20, known)
        await wait_for(lambda: recorded_bytes(stack, card) > 0, 30, "the recording under way")
        await agent.client.submit(agent.cancel("call_gone"))
        row = await final_of(stack, "call_gone", 60)
        assert row["state"] == "failed", row["history"]
        await wait_for(lambda: gateway_state(stack, card) == ("failed", "withdrawn"), 30, "ended")
        audio = [a for a in read_artifacts(stack.data_dir) if a["app_scope"] == SCOPE]
        assert len(audio) == 2, audio


async def stopped_in_the_terminal(stack: Stack, card: str) -> None:
    """The terminal chat says it records; its /stop ends the recording."""

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
