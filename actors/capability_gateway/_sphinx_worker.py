"""PocketSphinx on one utterance, in a process of its own: `speech.transcribe`'s engine.

Run as `python -I _sphinx_worker.py`, it reads raw audio on standard input (16-bit signed
little-endian samples, mono, 16 kHz: what the English model was trained on), decodes it with
the English model PocketSphinx ships in its wheel, and writes one JSON line, {"text": ...}, to
standard output. It imports nothing of the runtime, so that the gateway can kill it at its
deadline and the benchmark can time PocketSphinx alone on the same audio.
"""

from __future__ import annotations

import json
import sys

from pocketsphinx import Decoder

SAMPLE_RATE = 16_000


def transcribe(pcm: bytes) -> str:
    decoder = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
    decoder.start_utt()
    decoder.process_raw(pcm, full_utt=True)
    decoder.end_utt()
    hypothesis = decoder.hyp()
    return str(hypothesis.hypstr) if hypothesis is not None else ""


def main() -> int:
    text = transcribe(sys.stdin.buffer.read())
    sys.stdout.write(json.dumps({"text": text}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
