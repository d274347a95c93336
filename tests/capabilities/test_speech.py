"""Speech on the host: `speech.speak` keeps what espeak-ng says as a WAV artifact of the app
that asked (once, even when the gateway is killed after speaking and speaks again),
`speech.transcribe` gives PocketSphinx's text of one of the app's own WAV artifacts; what is
not a recording of the app, or too long, is refused with its code."""

from __future__ import annotations

import array
import io
import math
import wave
from pathlib import Path
from typing import Any

from actors.capability_gateway import served_capabilities
from apps.chat import history
from apps.chat._voice import MAX_PARTS as SPEECH_PARTS
from lineup.ui_session import UiSession
from peers.agent import AgentClient
from tests.artifacts.helpers import assert_whole, stored
from tests.kernel.helpers import Runtime
from tests.runtime.helpers import CONVERSATION, Stack, runtime_config, wait_for

from .helpers import (
    AFTER_EFFECT,
    answer,
    ask,
    asked,
    audit_of,
    card_for,
    crashing_once,
    keeper_ready,
    outcome,
    requests,
)

KEPT = 4  # the chat's artifacts, in the test that lets its speech go


def _samples(data: bytes) -> tuple[tuple[int, int, int], array.array[int]]:
    with wave.open(io.BytesIO(data), "rb") as reader:
        shape = (reader.getnchannels(), reader.getsampwidth(), reader.getframerate())
        samples = array.array("h", reader.readframes(reader.getnframes()))
    return shape, samples


async def test_speech_is_kept_as_an_artifact_and_written_back_as_text(
    stack: Stack, keeper: tuple[Path, Path], tmp_path: Path
) -> None:
    # The gateway kills itself once, after it spoke and before it recorded that it did.
    agent = await keeper_ready(stack, keeper, env=crashing_once(tmp_path / "once"))
    await ask(agent, "s-speak", "speech.speak", {"text": "focus twenty five"})
    answer(stack, await card_for(stack, "speech.speak"), "always")
    spoken = await outcome(stack, "s-speak")
    assert spoken["status"] == "completed", spoken
    assert (tmp_path / "once" / AFTER_EFFECT).exists()  # it did die there, and spoke again
    [row] = requests(stack)
    codes = await audit_of(stack, row["request_id"])
    assert codes[-2:] == ["capability.started", "capability.completed"]
    served = [a["detail"] for a in stack.audit() if a["message_id"] == row["request_id"]][-1]
    assert served.endswith("spoken by espeak-ng on this host"), served
    reference, duration_ms = spoken["output"]["artifact"], spoken["output"]["duration_ms"]
    assert reference["media_type"] == "audio/wav"
    assert reference["title"] == "Speech: focus twenty five"
    assert 800 < duration_ms < 3000, duration_ms
    # The artifact is the keeper's, and it is speech: 16-bit mono 16 kHz, not silence.
    data = (stack.data_dir / "artifacts" / reference["artifact_id"]).read_bytes()
    assert len(data) == reference["size"]
    shape, samples = _samples(data)
    assert shape == (1, 2, 16_000)
    assert abs(len(samples) / 16 - duration_ms) <= 1
    rms = math.sqrt(sum(s * s for s in samples) / len(samples))
    assert rms > 1000 and max(map(abs, samples)) > 8000, (rms, max(samples))

    await ask(agent, "s-hear", "speech.transcribe", {"artifact_id": reference["artifact_id"]})
    answer(stack, await card_for(stack, "speech.transcribe"), "always")
    heard = await outcome(stack, "s-hear", timeout=120)
    assert heard["status"] == "completed", heard
    # PocketSphinx hears espeak-ng's "focus" as "so just"; the number it gets word for word.
    assert "twenty five" in heard["output"]["text"], heard
    assert heard["output"]["duration_ms"] == duration_ms

    # A text artifact of the keeper's is no recording; an unknown id is nobody's artifact.
    made = await agent.call("call_make", "keeper.make", arguments={"text": "hi", "title": "t"})
    text_artifact = {"artifact_id": made["output"]["artifact_id"]}
    refused = await asked(agent, "s-text", "speech.transcribe", input=text_artifact)
    assert refused == {"status": "failed", "output": None, "code": "invalid_payload"}
    nobodys = {"artifact_id": "art_" + "0" * 26}
    missing = await asked(agent, "s-none", "speech.transcribe", input=nobodys)
    assert missing == {"status": "failed", "output": None, "code": "artifact_not_found"}
    # Too much to say at once: over the text's bound before anything runs, over the
    # audio's after espeak-ng spoke it; neither leaves an artifact.
    wordy = await asked(agent, "s-long", "speech.speak", input={"text": "word " * 39})
    assert wordy == {"status": "failed", "output": None, "code": "too_large"}
    too_long = await asked(agent, "s-201", "speech.speak", input={"text": "x" * 201})
    assert too_long == {"status": "failed", "output": None, "code": "invalid_payload"}
    # One recording, spoken twice around the kill, and the text: the store answered the
    # second keep with the first artifact.
    assert len(list((stack.data_dir / "artifacts").iterdir())) == 2


def test_speech_is_served_only_where_its_engines_are(tmp_path: Path) -> None:
    def tool(name: str) -> None:
        path = tmp_path / name
        path.write_text("#!/bin/sh\nexit 1\n")
        path.chmod(0o755)

    assert not {"speech.speak", "speech.transcribe"} & served_capabilities({"PATH": str(tmp_path)})
    tool("sox")  # resampling alone: PocketSphinx transcribes, nothing speaks
    served = served_capabilities({"PATH": str(tmp_path)})
    assert "speech.transcribe" in served and "speech.speak" not in served
    tool("espeak-ng")
    assert {"speech.speak", "speech.transcribe"} <= served_capabilities({"PATH": str(tmp_path)})


async def test_the_chat_says_every_part_of_a_long_answer_at_the_gateways_pace(
    stack: Stack,
) -> None:
    """Two answers of six parts each in voice mode: more parts than the gateway lets an app
    ask for at once (ten). The chat waits for the rate to allow the rest and says them all,
    in order, instead of leaving the answer half said."""
    await stack.start_appserver()
    await stack.start_runtime()
    agent = await stack.start_agent()
    envelopes = await _long_answers_in_voice_mode(stack, agent)
    said = await wait_for(lambda: _said(stack, envelopes), 60, "every part said")
    assert [[part for part, _ in parts] for parts in said] == [list(range(SPEECH_PARTS))] * 2
    limited = [r for r in requests(stack) if r["code"] == "rate_limited"]
    assert limited, "the gateway let every part through at once: nothing was paced"


async def _long_answers_in_voice_mode(stack: Stack, agent: AgentClient) -> list[dict[str, Any]]:
    """Voice mode on, then two answers of the agent's, each `SPEECH_PARTS` parts long."""
    UiSession(stack.data_dir, session_id="test").act(
        {"kind": "mode", "conversation_id": CONVERSATION, "mode": "audio"}
    )
    await wait_for(
        lambda: history(stack.data_dir, CONVERSATION)["mode"] == "audio", 30, "voice mode"
    )
    sentence = "This sentence is one part of a long answer, said aloud in its turn."
    envelopes = [
        agent.envelope(
            "lineup.message",
            CONVERSATION,
            {"text": " ".join([sentence] * SPEECH_PARTS), "format": "plain"},
        )
        for _ in range(2)
    ]
    for envelope in envelopes:
        assert (await agent.enqueue(envelope).verdict()).status == "accepted"
    return envelopes


def _said(stack: Stack, envelopes: list[dict[str, Any]]) -> list[list[tuple[int, str]]] | None:
    """Each answer's parts said, (part, its artifact), once every part of both is."""
    items = {item["id"]: item for item in stack.timeline()}
    said = [
        [(p["part"], p["artifact_id"]) for p in items.get(e["id"], {}).get("speech", [])]
        for e in envelopes
    ]
    return said if all(len(parts) == SPEECH_PARTS for parts in said) else None


async def test_a_long_spoken_conversation_lets_go_of_the_oldest_speech_to_keep_talking(
    stack: Stack,
) -> None:
    """The chat may keep four artifacts here: twelve parts are said all the same, each
    making room by letting go of the oldest speech, and what stays is the newest four,
    each row with its whole file."""
    await stack.start_appserver()
    config = runtime_config(stack.data_dir, stack.url)
    for child in config["children"]:
        if child["name"] == "store":
            child["config"]["artifact_limits"] = {"max_count": KEPT}
    stack.runtime = Runtime(stack.data_dir, config, log_dir=stack.base)
    await stack.start_runtime()
    agent = await stack.start_agent()
    envelopes = await _long_answers_in_voice_mode(stack, agent)
    said = await wait_for(lambda: _said(stack, envelopes), 60, "every part said")
    assert [[part for part, _ in parts] for parts in said] == [list(range(SPEECH_PARTS))] * 2
    newest = [artifact for parts in said for _, artifact in parts][-KEPT:]
    chats = [row["artifact_id"] for row in stored(stack).values() if row["app_scope"] == "chat"]
    assert chats == newest
    assert_whole(stack)
