"""Speech on this host, with no network: `speech.speak` and `speech.transcribe`.

- `speech.speak` (any time, repeatable): `input` {`text`} (at most `MAX_SPEECH_CHARS`)
  spoken by `espeak-ng` (its Klatt voice, text on stdin), resampled by `sox` to 16-bit mono
  16 kHz, each a subprocess under a deadline (`SPEAK_TIMEOUT_S`), kept as a WAV
  artifact of the requesting app (`NewArtifact`: the gateway has the store keep it under an
  id derived from the request, so a repeat after a crash lands on the same artifact).
  Speech longer than `MAX_SPEECH_S` would not fit an artifact: `too_large`. Output
  {`artifact`: its reference, `duration_ms`}.
- `speech.transcribe` (any time, repeatable: it only reads): `input` {`artifact_id`} of one
  of the app's own artifacts, a PCM WAV (`WAV_TYPES`) or a page's recording (`OPUS_TYPES`:
  Opus in WebM or Ogg, decoded to 16 kHz by the system's libopus, `_opus`), else
  `invalid_payload`, of at most `MAX_TRANSCRIBE_S` (else `too_large`); resampled by `sox`
  when it is not 16-bit mono 16 kHz, then decoded by PocketSphinx's English model (shipped
  in its wheel) in a process of its own (`python -I _sphinx_worker.py`), killed at
  `TRANSCRIBE_TIMEOUT_S`. Output
  {`text`, `duration_ms`}. A recording with no sound in it (no sample past `QUIET_PEAK`) is
  written out as nothing, `""`, without the engine: on silence PocketSphinx's model makes up
  a word ("dog").

Each is `unsupported_on_host` where its engine is missing: `espeak-ng` or `sox` off PATH, or
the `pocketsphinx` package not installed. One engine runs at a time (`ENGINES`): a model in
memory is about 110 MB, and the host's CPU is the user's.
"""

from __future__ import annotations

import array
import importlib.util
import io
import json
import shutil
import sys
import unicodedata
import wave
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

import trio

from contracts import Code, ContractError

from . import _opus as opus
from ._audio import OGG, WEBM, AudioError, read_recording
from ._provider_base import (
    Effect,
    NewArtifact,
    Provider,
    Served,
    invalid,
    text_field,
    with_fields,
)

SAMPLE_RATE: Final = 16_000  # what PocketSphinx's English model was trained on
SAMPLE_BYTES: Final = 2
QUIET_PEAK: Final = 328  # 1 % of a 16-bit sample's range (-40 dBFS): no sound below it
MAX_SPEECH_CHARS: Final = 200
# 16-bit mono 16 kHz is 32,000 bytes a second: 6 s stays under an artifact's 192 KiB.
MAX_SPEECH_S: Final = 6.0
MAX_TRANSCRIBE_S: Final = 10.0
SPEAK_TIMEOUT_S: Final = 10.0
# Loading the model takes about a second and decoding about the audio's duration on a busy
# host: a minute is far past both.
TRANSCRIBE_TIMEOUT_S: Final = 60.0
# espeak-ng's Klatt voice: PocketSphinx recognises it best of the English voices tried
# ("hello world", "one two three four five" word for word; the default voice's are not).
VOICE: Final = ("-v", "en-us+klatt2", "-a", "70")
WAV_TYPE: Final = "audio/wav"
WAV_TYPES: Final = frozenset({"audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"})
# What a page records (`audio.record`): Opus in WebM or Ogg, decoded by libopus (`_opus`).
OPUS_TYPES: Final = frozenset({WEBM, OGG})
WORKER: Final = Path(__file__).with_name("_sphinx_worker.py")
# sox: any WAV in, raw 16-bit little-endian mono 16 kHz out (quiet but for errors).
_TO_RAW: Final = (
    "sox", "-V1", "-t", "wav", "-", "-t", "raw", "-r", str(SAMPLE_RATE), "-c", "1",
    "-b", "16", "-e", "signed-integer", "-L", "-",
)  # fmt: skip
ENGINES: Final = trio.CapacityLimiter(1)
# How each is served, in its effect's audit row and in what `lineup settings show` lists.
SERVED_BY: Final = {
    "speech.speak": "spoken by espeak-ng on this host",
    "speech.transcribe": "written out by PocketSphinx on this host",
}


def speaks(env: Mapping[str, str]) -> bool:
    path = env.get("PATH", "")
    return bool(shutil.which("espeak-ng", path=path) and shutil.which("sox", path=path))


def transcribes(env: Mapping[str, str]) -> bool:
    has_sphinx = importlib.util.find_spec("pocketsphinx") is not None
    return has_sphinx and bool(shutil.which("sox", path=env.get("PATH", "")))


def speech_providers(env: Mapping[str, str]) -> dict[str, Provider]:
    """The speech capabilities this host serves, by name."""
    providers = {}
    if speaks(env):
        providers["speech.speak"] = Provider(False, True, check_speak, _speak(env))
    if transcribes(env):
        providers["speech.transcribe"] = Provider(
            False, True, check_transcribe, _transcribe(env), reads_artifact=True
        )
    return providers


def check_speak(raw: Any) -> dict[str, Any]:
    value = with_fields(raw, {"text"})
    text_field(value.get("text"), "text", MAX_SPEECH_CHARS)
    return value


def check_transcribe(raw: Any) -> dict[str, Any]:
    value = with_fields(raw, {"artifact_id"})
    text_field(value.get("artifact_id"), "artifact_id", 80)
    return value


def wav(pcm: bytes) -> bytes:
    """16-bit mono 16 kHz samples as a WAV file."""
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(SAMPLE_BYTES)
        writer.setframerate(SAMPLE_RATE)
        writer.writeframes(pcm)
    return out.getvalue()


def duration_ms(pcm: bytes) -> int:
    return round(len(pcm) * 1000 / (SAMPLE_RATE * SAMPLE_BYTES))


def title_of(text: str) -> str:
    """The artifact's title: what was said, on one line, without control characters."""
    shown = "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp"))
    words = " ".join(shown.split()) or "speech"
    return f"Speech: {words[:80]}{'…' if len(words) > 80 else ''}"


async def _run(command: list[str], data: bytes, env: Mapping[str, str]) -> bytes:
    done = await trio.run_process(
        command, stdin=data, capture_stdout=True, capture_stderr=True, env=dict(env)
    )
    return bytes(done.stdout)


def _speak(env: Mapping[str, str]) -> Callable[[Effect], Awaitable[Served]]:
    async def run(effect: Effect) -> Served:
        text = str(effect.input["text"])
        async with ENGINES:
            with trio.fail_after(SPEAK_TIMEOUT_S):
                spoken = await _run(["espeak-ng", *VOICE, "-b", "1", "--stdin", "--stdout"],
                                    text.encode(), env)  # fmt: skip
                pcm = await _run(list(_TO_RAW), spoken, env)
        if len(pcm) > MAX_SPEECH_S * SAMPLE_RATE * SAMPLE_BYTES:
            raise ContractError(
                Code.TOO_LARGE,
                f"the speech would last {duration_ms(pcm) / 1000:.1f} s, over the"
                f" {MAX_SPEECH_S:.0f} s an artifact holds; say less at a time",
            )
        made = NewArtifact(wav(pcm), WAV_TYPE, title_of(text))
        output = {"artifact": made, "duration_ms": duration_ms(pcm)}
        return Served(output, SERVED_BY["speech.speak"])

    return run


def _too_long(seconds: float) -> ContractError:
    return ContractError(
        Code.TOO_LARGE,
        f"the recording lasts {seconds:.1f} s; at most {MAX_TRANSCRIBE_S:.0f} s are"
        " transcribed at a time: cut it shorter",
    )


def _opus_pcm(data: bytes) -> bytes:
    """A page's recording (Opus in WebM or Ogg, as `audio.record` keeps it) decoded to
    16-bit mono 16 kHz samples by libopus, which resamples itself."""
    try:
        recording = read_recording(data, packets=True)
    except AudioError as exc:
        raise invalid(f"the artifact is not a recording this host reads ({exc})") from None
    if recording.codec not in ("A_OPUS", "opus"):
        raise invalid(f"the recording's sound is {recording.codec}, not Opus")
    if recording.duration_ms > MAX_TRANSCRIBE_S * 1000:
        raise _too_long(recording.duration_ms / 1000)
    try:
        return opus.decode(recording.packets, SAMPLE_RATE)
    except AudioError as exc:
        raise invalid(str(exc)) from None


def pcm_of(data: bytes, media_type: str | None) -> tuple[bytes, bool]:
    """The artifact's samples and whether they are 16-bit mono 16 kHz already; refuses what
    is not a PCM WAV or a page's Opus recording, or lasts too long, with what to do."""
    if media_type in OPUS_TYPES:
        return _opus_pcm(data), True
    if media_type not in WAV_TYPES:
        raise invalid(f"the artifact is {media_type}, not a WAV recording (audio/wav)")
    try:
        with wave.open(io.BytesIO(data), "rb") as reader:
            channels, width, rate = (
                reader.getnchannels(),
                reader.getsampwidth(),
                reader.getframerate(),
            )
            frames = reader.readframes(reader.getnframes())
    except (wave.Error, EOFError, ValueError) as exc:
        raise invalid(f"the artifact is not a PCM WAV file ({exc}); record 16-bit PCM") from None
    if not rate or not channels or not width:
        raise invalid("the artifact's WAV header names no sample rate, width or channel")
    seconds = len(frames) / (channels * width * rate)
    if seconds > MAX_TRANSCRIBE_S:
        raise _too_long(seconds)
    return frames, (channels, width, rate) == (1, SAMPLE_BYTES, SAMPLE_RATE)


def silent(pcm: bytes) -> bool:
    """Whether 16-bit samples hold no sound: none of them past `QUIET_PEAK`."""
    samples = array.array("h", pcm[: len(pcm) // SAMPLE_BYTES * SAMPLE_BYTES])
    if not samples:
        return True
    loudest, quietest = max(samples), min(samples)
    return loudest < QUIET_PEAK and -quietest < QUIET_PEAK


def worker_command() -> list[str]:
    """The engine's process: this interpreter, isolated from the environment's paths."""
    return [sys.executable, "-I", str(WORKER)]


def _transcribe(env: Mapping[str, str]) -> Callable[[Effect], Awaitable[Served]]:
    async def run(effect: Effect) -> Served:
        assert effect.content is not None, "the gateway reads the artifact first"
        pcm, ready = pcm_of(effect.content, effect.media_type)
        async with ENGINES:
            with trio.fail_after(TRANSCRIBE_TIMEOUT_S):
                if not ready:
                    pcm = await _run(list(_TO_RAW), effect.content, env)
                said = ""
                if not silent(pcm):
                    said = json.loads(await _run(worker_command(), pcm, env))["text"]
        output = {"text": str(said), "duration_ms": duration_ms(pcm)}
        return Served(output, SERVED_BY["speech.transcribe"])

    return run
